import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { pipeline } from "node:stream/promises";
import { setImmediate as yieldToLoop } from "node:timers/promises";
import { createGzip } from "node:zlib";
import type { Mailer } from "../../mail/index.js";
import type { Logger } from "../../observability/index.js";
import type { ExportPosition, ExportReader } from "../reader.js";
import type { ExportFiles } from "./files.js";
import type { ExecutionClaim, ExportStore } from "./store.js";
import type { ExportExecution, ExportJob } from "./types.js";

/** Rows read per statement: short enough to cancel quickly and to let requests through. */
const PAGE_ROWS = 5000;

export interface RunnerDeps {
  store: ExportStore;
  reader: ExportReader;
  files: ExportFiles;
  mailer: Mailer;
  logger: Logger;
  clock: () => number;
  /** The signed download URL of an execution's file, for the notification e-mail. */
  downloadUrl: (executionId: string) => string;
  /** Told when an execution ends SUCCEEDED or FAILED, with the rows written. */
  onEnd?: (status: "SUCCEEDED" | "FAILED", rows: number) => void;
  /** Told after each page of the running execution, with its rows so far (undefined once none runs). */
  onProgress?: (rows: number | undefined) => void;
  /** How long this runner's claim on an execution lasts unless renewed (ms); renewed every third of it. */
  leaseMs?: number;
}

const DEFAULT_LEASE_MS = 30_000;

/** How often a long export logs how far it got. */
const PROGRESS_LOG_MS = 10_000;

class Cancelled extends Error {}

/**
 * Runs export executions one at a time, in submission order. Each reads its
 * window in pages and streams CSV through gzip into the export files; a
 * cancel stops it at the next page and removes the partial file.
 *
 * The runners of the processes sharing a database each hold a claim on the executions they run or
 * have queued (`ExecutionClaim`), renewed while they work: an execution runs in one runner, and
 * one whose runner died is taken over by the next `resume` after its claim ends.
 */
export class ExportRunner {
  /** This runner's name on its claims. */
  readonly holder = randomUUID();
  private readonly queue: string[] = [];
  private readonly cancelled = new Set<string>();
  private current: string | undefined;
  /** The running execution, once this runner holds its claim. */
  private claimed: string | undefined;
  private loop: Promise<void> | undefined;
  private stopping = false;
  /** Resolves when the queue drains; tests and shutdown wait on it. */
  private idleWaiters: (() => void)[] = [];
  private readonly leaseMs: number;

  constructor(private readonly deps: RunnerDeps) {
    this.leaseMs = deps.leaseMs ?? DEFAULT_LEASE_MS;
  }

  /** A claim of this runner from now: what a new execution queued here is stored with. */
  claim(): ExecutionClaim {
    return { holder: this.holder, until: this.deps.clock() + this.leaseMs };
  }

  enqueue(executionId: string): void {
    if (this.stopping) return;
    if (!this.queue.includes(executionId) && this.current !== executionId) this.queue.push(executionId);
    this.loop ??= this.drain().finally(() => {
      this.loop = undefined;
      for (const w of this.idleWaiters.splice(0)) w();
    });
  }

  /** Marks an execution to stop; the store's CANCELLED status is set by the caller. */
  cancel(executionId: string): void {
    const i = this.queue.indexOf(executionId);
    if (i >= 0) this.queue.splice(i, 1);
    if (this.current === executionId) this.cancelled.add(executionId);
  }

  /** Picks up the executions no runner holds: a previous process's, or a dead or stopped runner's. */
  async resume(): Promise<void> {
    for (const e of await this.deps.store.openExecutions(this.deps.clock())) this.enqueue(e.id);
  }

  idle(): Promise<void> {
    return this.loop ? new Promise((resolve) => this.idleWaiters.push(resolve)) : Promise.resolve();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.queue.length = 0;
    // The running export is interrupted; it stays RUNNING in the store and is resumed on the next start,
    // or by another process's runner at once: this one hands its claims back.
    if (this.current) this.cancelled.add(this.current);
    await this.idle();
    await this.deps.store
      .renewExecutionClaims(this.holder, 0)
      .catch((err: unknown) => this.deps.logger.warn({ err }, "export claims not handed back; they end on their own"));
  }

  private async drain(): Promise<void> {
    const renewing = setInterval(() => void this.renewClaims(), this.leaseMs / 3);
    renewing.unref();
    try {
      for (let id = this.queue.shift(); id !== undefined; id = this.queue.shift()) {
        this.current = id;
        try {
          await this.run(id);
        } catch (err) {
          this.deps.logger.error({ err, executionId: id }, "export execution failed");
        } finally {
          this.current = undefined;
          this.claimed = undefined;
          this.cancelled.delete(id);
          this.deps.onProgress?.(undefined);
        }
      }
    } finally {
      clearInterval(renewing);
    }
  }

  /**
   * Keeps this runner's claims; the running execution stops at its next page when this runner no
   * longer holds it (cancelled through another process, or taken over after a stall).
   */
  private async renewClaims(): Promise<void> {
    try {
      const held = await this.deps.store.renewExecutionClaims(this.holder, this.deps.clock() + this.leaseMs);
      const running = this.claimed;
      if (running !== undefined && this.current === running && !held.includes(running)) this.cancelled.add(running);
    } catch (err) {
      this.deps.logger.warn({ err }, "export claims not renewed");
    }
  }

  private async run(id: string): Promise<void> {
    const { store, logger } = this.deps;
    const execution = await store.execution(id);
    if (!execution || (execution.status !== "QUEUED" && execution.status !== "RUNNING")) return;
    const stored = await store.job(execution.jobId);
    if (!stored) return;
    // Another runner holds it: it runs there.
    if (!(await store.claimExecution(id, this.claim(), this.deps.clock()))) return;
    this.claimed = id;
    const started = performance.now();
    let written: { scanned: number; rows: number };
    try {
      written = await this.write(execution, stored.job);
    } catch (err) {
      if (err instanceof Cancelled) {
        if (this.stopping) logger.info({ executionId: id }, "export interrupted by shutdown; resumes on start");
        return;
      }
      const engineMs = Math.round(performance.now() - started);
      await store.transition(id, "FAILED", { completion: this.now(), engineMs });
      logger.error({ err, executionId: id }, "export failed");
      this.deps.onEnd?.("FAILED", 0);
      await this.notify(stored.job, (await store.execution(id))!);
      return;
    }
    const engineMs = Math.round(performance.now() - started);
    if (
      !(await store.transition(id, "SUCCEEDED", { completion: this.now(), engineMs, dataScanned: written.scanned }))
    ) {
      await this.deps.files.remove(id);
      return;
    }
    this.deps.onEnd?.("SUCCEEDED", written.rows);
    await this.notify(stored.job, (await store.execution(id))!);
  }

  /** Streams the CSV of the execution's window; answers the bytes of observations scanned and the rows written. */
  private async write(e: ExportExecution, job: ExportJob): Promise<{ scanned: number; rows: number }> {
    const out = this.deps.files.create(e.id);
    const gzip = createGzip();
    const done = pipeline(gzip, out.stream);
    const put = async (text: string): Promise<void> => {
      if (!gzip.write(text)) await once(gzip, "drain");
    };
    let scanned = 0;
    let written = 0;
    let logged = performance.now();
    try {
      await put(csvLine(["timestamp", "thingName", ...job.resources]));
      const scope = job.thingType !== undefined ? { thingType: job.thingType } : { things: job.things ?? [] };
      let after: ExportPosition = { ts: -8_640_000_000_000_000, id: 0 };
      for (;;) {
        if (this.cancelled.has(e.id)) throw new Cancelled();
        const rows = await this.deps.reader.exportPage(scope, e.windowFrom, e.windowTo, after, PAGE_ROWS);
        let chunk = "";
        for (const [, ts, thingName, json] of rows) {
          scanned += Buffer.byteLength(json);
          const state = (JSON.parse(json) as { state?: Record<string, unknown> }).state ?? {};
          chunk += csvLine([new Date(ts).toISOString(), thingName, ...job.resources.map((r) => state[r])]);
        }
        written += rows.length;
        this.deps.onProgress?.(written);
        // A long export says how far it got, so that an operator can tell slow from stuck.
        if (performance.now() - logged >= PROGRESS_LOG_MS) {
          logged = performance.now();
          this.deps.logger.info({ executionId: e.id, rows: written, bytesScanned: scanned }, "export progress");
        }
        if (chunk) await put(chunk);
        if (rows.length < PAGE_ROWS) break;
        const [id, ts] = rows[rows.length - 1]!;
        after = { ts, id };
        await yieldToLoop();
      }
      gzip.end();
      await done;
      await out.commit();
      return { scanned, rows: written };
    } catch (err) {
      gzip.destroy(err instanceof Error ? err : new Error(String(err)));
      await done.catch(() => undefined);
      await out.abort();
      throw err;
    }
  }

  private async notify(job: ExportJob, e: ExportExecution): Promise<void> {
    if (!job.notifyByEmail || !job.recipients) return;
    const link = e.status === "SUCCEEDED" ? `\nDownload (valid 15 minutes): ${this.deps.downloadUrl(e.id)}` : "";
    try {
      await this.deps.mailer.send({
        to: job.recipients.split(",").map((r) => r.trim()),
        subject: `Export ${job.jobName}: ${e.status}`,
        text: `Export job ${job.jobName} (${job.id}), execution ${e.id}: ${e.status}.\nFile: ${e.executionFileName}\nData scanned: ${e.dataScannedInBytes} bytes${link}\n`,
      });
    } catch (err) {
      this.deps.logger.error({ err, executionId: e.id }, "export notification e-mail failed");
    }
  }

  private now(): string {
    return new Date(this.deps.clock()).toISOString();
  }
}

function csvLine(values: unknown[]): string {
  return `${values.map(csvField).join(",")}\n`;
}

function csvField(v: unknown): string {
  if (v === undefined || v === null) return "";
  const s = typeof v === "object" ? JSON.stringify(v) : String(v);
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}
