import type { Database, Statement } from "better-sqlite3";
import { Counter, type Registry } from "prom-client";
import type { Logger } from "../observability/index.js";

/** One kind of row that ages out, and how long it is kept. */
interface RetentionKind {
  /** For logs and the `kind` label of `dms_retention_deleted_total` ("observations", "events", ...). */
  kind: string;
  /** How long a row is kept (milliseconds); undefined keeps it forever. */
  windowMs: number | undefined;
}

/** Rows of a table of the service's database: deleted by a statement the sweeper prepares. */
export interface TableRetention extends RetentionKind {
  table: string;
  /**
   * The condition of a row to delete, with one `?` for the cutoff (epoch milliseconds), e.g.
   * `ts < ?`. An index must answer it in order (`ORDER BY` the same column), or each batch scans.
   */
  olderThan: string;
  /** The column the condition compares, ordered by so each batch takes the oldest rows. */
  orderBy: string;
}

/** Rows of a store that deletes its own (the observations' day partitions): up to `limit` per call, oldest first. */
export interface StoreRetention extends RetentionKind {
  remove(cutoff: number, limit: number): Promise<number>;
}

export type RetentionTarget = TableRetention | StoreRetention;

export interface RetentionOptions {
  db: Database;
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
  private readonly removers: { target: RetentionTarget; remove: (cutoff: number, limit: number) => Promise<number> }[];

  constructor(private readonly options: RetentionOptions) {
    this.batchSize = options.batchSize ?? DEFAULT_BATCH;
    this.removers = options.targets
      .filter((t) => t.windowMs !== undefined)
      .map((target) => ({ target, remove: "remove" in target ? target.remove : tableRemover(options.db, target) }));
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
    return this.removers.length > 0;
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
    for (const { target, remove } of this.removers) {
      const cutoff = this.options.clock() - target.windowMs!;
      let total = 0;
      for (;;) {
        const started = performance.now();
        const changes = await remove(cutoff, this.batchSize);
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

function tableRemover(db: Database, target: TableRetention): (cutoff: number, limit: number) => Promise<number> {
  const statement: Statement<[number, number]> = db.prepare(
    `DELETE FROM ${target.table} WHERE rowid IN (
       SELECT rowid FROM ${target.table} WHERE ${target.olderThan} ORDER BY ${target.orderBy} LIMIT ?)`,
  );
  return async (cutoff, limit) => statement.run(cutoff, limit).changes;
}
