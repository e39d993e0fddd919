import type { Db } from "../store/index.js";
import { ObservationPartitions, partitionMigrations } from "./partitions.js";
import { toColumns, type ObservationColumns } from "./rows.js";
import type { StoredObservationInput } from "./types.js";

/**
 * The observation store: written by the rule engine, read by FIND and exports
 * (through `ObservationReader`), trimmed by retention. Writes resolve once
 * durable: the engine's source commits only after that. One implementation
 * per backend: SQLite in this thread (`SqliteObservationStore`) or on a writer
 * thread of its own (`ThreadedObservationStore`, the engine's).
 */
export interface ObservationStore {
  /** Stores a batch in one transaction; rows of a replay (at or below their stream's mark) are skipped. */
  insertBatch(inputs: readonly StoredObservationInput[]): Promise<void>;
  /** The same for a batch already in columns (the engine builds them as it accepts observations). */
  insertColumns(columns: ObservationColumns): Promise<void>;
  /** Deletes up to `limit` observations older than `cutoff` (epoch ms), oldest first; answers how many. */
  deleteOlderThan(cutoff: number, limit: number): Promise<number>;
  count(): Promise<number>;
  /** Builds the thing index of the days that closed, now (the store does it on its own, once a minute after a batch). */
  maintain(): Promise<void>;
  close(): Promise<void>;
}

/** The day partitions on a connection of this thread: tests, tools and processes without the engine. */
export class SqliteObservationStore implements ObservationStore {
  private readonly partitions: ObservationPartitions;

  constructor(db: Db, clock?: () => number) {
    this.partitions = new ObservationPartitions(db, clock);
  }

  async insertBatch(inputs: readonly StoredObservationInput[]): Promise<void> {
    await this.insertColumns(toColumns(inputs));
  }

  async insertColumns(columns: ObservationColumns): Promise<void> {
    if (columns.count > 0) this.partitions.insert(columns);
  }

  async deleteOlderThan(cutoff: number, limit: number): Promise<number> {
    return this.partitions.deleteOlderThan(cutoff, limit);
  }

  async count(): Promise<number> {
    return this.partitions.count();
  }

  async maintain(): Promise<void> {
    this.partitions.maintain(true);
  }

  async close(): Promise<void> {}
}

export { partitionMigrations as observationMigrations };
