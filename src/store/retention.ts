import type { Database, Statement } from "better-sqlite3";
import { Counter, type Registry } from "prom-client";
import type { Logger } from "../observability/index.js";

/** One kind of row that ages out, how long it is kept, and the store that deletes it. */
export interface RetentionTarget {
  /** For logs and the `kind` label of `dms_retention_deleted_total` ("observations", "events", ...). */
  kind: string;
  /** How long a row is kept (milliseconds); undefined keeps it forever. */
  windowMs: number | undefined;
  /** Deletes up to `limit` rows older than `cutoff` (epoch ms), oldest first; answers how many it deleted. */
  remove(cutoff: number, limit: number): Promise<number>;
}

export interface RetentionOptions {
  targets: readonly RetentionTarget[];
  clock: () => number;
  logger: Logger;
  registry?: Registry;
  /** Rows one DELETE takes at most: the write lock is held for one batch only. */
  batchSize?: number;
  /** How often a sweep runs once nothing is left to delete. */
  intervalMs?: number;
}

const DEFAULT_BATCH = 1000;
const DEFAULT_INTERVAL_MS = 60_000;
/** The least pause between two batches, so other work on the event loop and the database goes first. */
const MIN_PAUSE_MS = 5;

/**
 * Deletes rows older than their target's window, in the background: small
 * batches (one short transaction each), each followed by a pause at least as
 * long as the batch took, so deletion uses at most about half of the time it
 * runs in and the engine's batches (on the same connection and event loop, or
 * another process on the same file) are never held up by more than one batch.
 */
export class RetentionSweeper {
  readonly name = "retention";
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = true;
  private readonly batchSize: number;
  private readonly deleted: Counter<"kind"> | undefined;
  private readonly targets: readonly RetentionTarget[];

  constructor(private readonly options: RetentionOptions) {
    this.batchSize = options.batchSize ?? DEFAULT_BATCH;
    this.targets = options.targets.filter((t) => t.windowMs !== undefined);
    this.deleted =
      options.registry &&
      new Counter({
        name: "dms_retention_deleted_total",
        help: "Rows deleted because they were older than their retention window, by kind",
        labelNames: ["kind"],
        registers: [options.registry],
      });
  }

  /** True when some target has a window (else the sweeper has nothing to do). */
  get active(): boolean {
    return this.targets.length > 0;
  }

  async start(): Promise<void> {
    if (!this.active) return;
    this.stopped = false;
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  /**
   * Deletes everything older than the windows as of now, batch by batch; resolves
   * with the rows deleted per kind. The background loop calls it; tests and
   * benchmarks may too.
   */
  async sweep(shouldStop: () => boolean = () => false): Promise<Record<string, number>> {
    const counts: Record<string, number> = {};
    for (const target of this.targets) {
      const cutoff = this.options.clock() - target.windowMs!;
      let total = 0;
      for (;;) {
        const started = performance.now();
        const changes = await target.remove(cutoff, this.batchSize);
        total += changes;
        this.deleted?.inc({ kind: target.kind }, changes);
        if (changes < this.batchSize) break;
        const took = performance.now() - started;
        await new Promise((r) => setTimeout(r, Math.max(MIN_PAUSE_MS, took)));
        if (shouldStop()) break;
      }
      counts[target.kind] = total;
      if (total > 0) this.options.logger.info({ kind: target.kind, deleted: total, cutoff }, "retention deleted");
    }
    return counts;
  }

  private schedule(delayMs: number): void {
    this.timer = setTimeout(() => {
      this.running = this.sweep(() => this.stopped)
        .then(
          () => undefined,
          (err: unknown) => this.options.logger.error({ err }, "retention sweep failed"),
        )
        .finally(() => {
          this.running = undefined;
          if (!this.stopped) this.schedule(this.options.intervalMs ?? DEFAULT_INTERVAL_MS);
        });
    }, delayMs);
    this.timer.unref();
  }
}

/**
 * Deletes the oldest rows of a SQLite table matching `olderThan` (one `?` for the cutoff, e.g.
 * `ts < ?`), up to a limit per call; an index must answer the condition in `orderBy`'s order, or
 * each batch scans. What the SQLite stores' `deleteOlderThan` run.
 */
export function oldestRowsRemover(
  db: Database,
  table: string,
  olderThan: string,
  orderBy: string,
): (cutoff: number, limit: number) => Promise<number> {
  const statement: Statement<[number, number]> = db.prepare(
    `DELETE FROM ${table} WHERE rowid IN (SELECT rowid FROM ${table} WHERE ${olderThan} ORDER BY ${orderBy} LIMIT ?)`,
  );
  return async (cutoff, limit) => statement.run(cutoff, limit).changes;
}
