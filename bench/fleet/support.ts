/** What the sections of bench/fleet share: the service and client processes, and the report header. */
import { execFileSync, fork, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { cpus, loadavg, totalmem } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { generateDeviceSecret } from "../../src/things/index.js";

const here = dirname(fileURLToPath(import.meta.url));
export const API_KEY = "bench-fleet-key-0001";

export function argument(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

export function progress(line: string): void {
  process.stderr.write(`  ${line}\n`);
}

/** The machine and how busy it was: the machine is shared, so every figure says it. */
export function machine(): string {
  const [one, five] = loadavg();
  return `${cpus()[0]?.model ?? "unknown"}, ${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}; load average ${one!.toFixed(1)} (1 min), ${five!.toFixed(1)} (5 min)`;
}

/**
 * Forks a bench/fleet child script (tsx) and hands it `env`. With `BENCH_CPU_PROF=<dir>` the dms
 * processes (service.ts) write a CPU profile there when they exit (open it in Chrome's DevTools).
 */
export function child(script: string, env: Record<string, string> = {}): ChildProcess {
  const profile = process.env.BENCH_CPU_PROF && script === "service.ts" ? process.env.BENCH_CPU_PROF : undefined;
  return fork(join(here, script), [], {
    execArgv: ["--import", "tsx", ...(profile ? ["--cpu-prof", "--cpu-prof-dir", profile] : [])],
    env: { ...process.env, ...env },
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
}

/** Sends `message` (unless undefined) and waits for the child's `answer` command. */
export function request<T>(
  proc: ChildProcess,
  message: Record<string, unknown> | undefined,
  answer: string,
): Promise<T> {
  return new Promise((resolve, reject) => {
    const onMessage = (m: { cmd: string }): void => {
      if (m.cmd !== answer) return;
      proc.off("message", onMessage);
      proc.off("exit", onExit);
      resolve(m as T);
    };
    const onExit = (code: number | null): void => reject(new Error(`child exited (${code}) before ${answer}`));
    proc.on("message", onMessage);
    proc.once("exit", onExit);
    if (message) proc.send(message);
  });
}

export async function stop(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null) return;
  const exited = new Promise((r) => proc.once("exit", r));
  proc.send({ cmd: "stop" });
  await exited;
}

export interface ThingEntry {
  thingName: string;
  thingType: string;
  domain: string;
  serial?: string;
  secret?: string;
}

/** Which secrets the devices get: dms's generated ones, or chosen ones as an operator supplies them. */
export type SecretKind = "generated" | "chosen";

/** An operator-supplied secret: 32 random characters, as the README's provisioning example suggests. */
export function chosenSecret(): string {
  return randomBytes(24).toString("base64url");
}

export function secretOf(kind: SecretKind): string {
  return kind === "generated" ? generateDeviceSecret() : chosenSecret();
}

/**
 * `count` devices named `<prefix>-<random tag>-<i>` (unique per run, so Mosquitto's sessions of an
 * earlier run never meet them), each with a secret of `kind`, provisioned into `file`.
 */
export function provisionDevices(
  file: string,
  prefix: string,
  count: number,
  kind: SecretKind = "generated",
): Required<ThingEntry>[] {
  const tag = randomBytes(3).toString("hex");
  const things = Array.from({ length: count }, (_, i) => ({
    thingName: `${prefix}-${tag}-${i}`,
    thingType: "sensor",
    domain: "fleet",
    serial: `SN-${i}`,
    secret: secretOf(kind),
  }));
  writeProvision(file, things);
  return things;
}

/** A provisioning file: one domain, one thing type, `things`. */
export function writeProvision(file: string, things: ThingEntry[]): void {
  writeFileSync(
    file,
    JSON.stringify({
      apiKeys: [API_KEY],
      domains: [{ id: "root" }, { id: "fleet", parent: "root" }],
      thingTypes: [{ id: "sensor", domain: "fleet", resources: [{ name: "temp", dataType: "double" }] }],
      things,
    }),
  );
}

/** The configuration of a benchmark's dms process. */
export function serviceEnv(dataDir: string, provision: string, roles: string): Record<string, string> {
  return {
    DMS_HTTP_PORT: "0",
    DMS_HTTP_HOST: "127.0.0.1",
    DMS_MQTT_PORT: "0",
    DMS_DATA_DIR: dataDir,
    DMS_PROVISION: provision,
    DMS_LOG_LEVEL: "warn",
    DMS_ROLES: roles,
    DMS_JWT_SECRET: "bench-secret-bench-secret-bench-secret",
  };
}

/** Mosquitto's CPU time (ms) from /proc; 0 when it cannot be read (not Linux, another user's process). */
export function mosquittoCpuMs(): number {
  try {
    const pid = execFileSync("pidof", ["mosquitto"], { encoding: "utf8" }).trim().split(" ")[0];
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    // utime and stime (fields 14 and 15 of stat, 12 and 13 after the command) in clock ticks of 10 ms.
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return 0;
  }
}

/**
 * Connections the kernel dropped because a listening socket's accept queue was full (TcpExt
 * ListenOverflows, machine-wide, since boot): a dropped connect is tried again by the client's TCP
 * only after 1, 3, 7, 15, 31 s..., which is what a slow accept loop costs in a storm.
 */
export function listenOverflows(): number {
  try {
    const [names, values] = readFileSync("/proc/net/netstat", "utf8")
      .split("\n")
      .filter((l) => l.startsWith("TcpExt:"))
      .map((l) => l.split(" "));
    return Number(values![names!.indexOf("ListenOverflows")] ?? 0);
  } catch {
    return 0;
  }
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
