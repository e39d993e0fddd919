import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, mkdirSync, openSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { until } from "../support/wait.js";

const root = join(import.meta.dirname, "..", "..");

/** What every node of the cluster shares: the database, the broker, the topics and the group. */
export interface ClusterEnv {
  databaseUrl: string;
  brokers: string;
  observationsTopic: string;
  eventsTopic: string;
  groupId: string;
  partitions: number;
}

/**
 * One dms node as a process of its own, as `node --import tsx src/main.ts` (scripts/cluster.sh runs
 * it so too): its own data dir and REST port, everything else shared through `ClusterEnv`. Its
 * output goes to `dms.log` in its directory (the previous run's to `dms.log.<n>`).
 */
export class ClusterNode {
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private runs = 0;

  constructor(
    readonly index: number,
    private readonly dir: string,
    readonly port: number,
    private readonly env: Record<string, string>,
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** The log of the current (or last) run. */
  get logFile(): string {
    return join(this.dir, `dms.log.${this.runs}`);
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  start(): void {
    if (this.running) throw new Error(`node ${this.index} is running`);
    mkdirSync(join(this.dir, "data"), { recursive: true });
    this.runs++;
    const log = openSync(this.logFile, "a");
    const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
      cwd: root,
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", DMS_DATA_DIR: join(this.dir, "data"), ...this.env },
      stdio: ["ignore", log, log],
    });
    closeSync(log);
    this.child = child;
    this.exited = new Promise((resolve) => child.once("exit", () => resolve()));
  }

  /** Waits for `/readyz` to answer 200; fails early, with the log's tail, when the process exits. */
  async ready(timeoutMs = 120_000): Promise<void> {
    await until(
      async () => {
        if (!this.running) throw new Error(`node ${this.index} exited during start-up:\n${this.tail()}`);
        const res = await fetch(`${this.url}/readyz`).catch(() => undefined);
        return res?.status === 200;
      },
      timeoutMs,
      `node ${this.index} ready`,
      200,
    ).catch((err: unknown) => {
      throw new Error(`${(err as Error).message}\n${this.tail()}`, { cause: err });
    });
  }

  /** SIGKILL, as a crash would; resolves once the process is gone. */
  async kill(): Promise<void> {
    this.child?.kill("SIGKILL");
    await this.exited;
  }

  /** SIGTERM and the exit it leads to (SIGKILL after `timeoutMs`). */
  async stop(timeoutMs = 30_000): Promise<void> {
    if (!this.running) return;
    this.child!.kill("SIGTERM");
    const timer = setTimeout(() => this.child?.kill("SIGKILL"), timeoutMs);
    await this.exited;
    clearTimeout(timer);
  }

  /** The warnings and errors every run of the node logged (pino levels 40 and up). */
  problems(): string[] {
    const lines: string[] = [];
    for (let run = 1; run <= this.runs; run++) {
      let text: string;
      try {
        text = readFileSync(join(this.dir, `dms.log.${run}`), "utf8");
      } catch {
        continue;
      }
      for (const line of text.split("\n")) if (/^\{"level":[4-6]0,/.test(line)) lines.push(`run ${run}: ${line}`);
    }
    return lines;
  }

  /** The last lines of the current run's log, for a failure message. */
  tail(lines = 30): string {
    try {
      return readFileSync(this.logFile, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
    } catch {
      return "(no log)";
    }
  }
}

/** The DMS_* and KAFKA_* settings of node `index` (1-based), REST on `port`. */
export function nodeEnv(shared: ClusterEnv, port: number): Record<string, string> {
  return {
    DMS_DATABASE_URL: shared.databaseUrl,
    DMS_HTTP_HOST: "127.0.0.1",
    DMS_HTTP_PORT: String(port),
    DMS_PUBLIC_URL: `http://127.0.0.1:${port}`,
    DMS_ROLES: "api,engine,actions,scheduler",
    DMS_WEBHOOK_ALLOW_PRIVATE: "true",
    DMS_FIND_THREADS: "1",
    DMS_LOG_LEVEL: "info",
    KAFKA_BROKERS: shared.brokers,
    KAFKA_OBSERVATIONS_TOPIC: shared.observationsTopic,
    KAFKA_EVENTS_TOPIC: shared.eventsTopic,
    KAFKA_GROUP_ID: shared.groupId,
    KAFKA_TOPIC_PARTITIONS: String(shared.partitions),
    KAFKA_SESSION_TIMEOUT_MS: "6000",
    KAFKA_HEARTBEAT_INTERVAL_MS: "1000",
  };
}
