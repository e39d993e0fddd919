import pg from "pg";
import { PgStateStore, statePgMigrations, type ThingState } from "../../src/engine/index.js";
import { fromRow, type ThingRow } from "../../src/engine/state/doc.js";
import type { PgMigration } from "../../src/store/index.js";
import { createPgDatabase, type PgDatabase } from "../../test/support/postgres.js";
import { statCpuSeconds } from "../engine/threads.js";
import { sourceOf } from "./states.js";

/**
 * What a per-partition read needs of the state table: no new column (`last_source` holds
 * `kafka:<topic>:<partition>` of the thing's last observation), an index on it.
 */
export const partitionIndexMigration: PgMigration = {
  id: "bench-handover-last-source-index",
  up: "CREATE INDEX engine_thing_state_last_source ON engine_thing_state (last_source)",
};

/** The columns `PgStateStore` reads, of the things whose last observation came from the given partitions. */
const SELECT_BY_SOURCE = `SELECT thing_name, ts::float8 AS ts, seq::float8 AS seq, last_source, last_offset::float8 AS last_offset, doc
  FROM engine_thing_state WHERE last_source = ANY($1::text[])`;

/**
 * The engine's state table on a database of its own: the old owner's store, which flushes, and the
 * new owner's, which reads; each on a pool of one connection kept open, so that the server's CPU
 * for each is its backend's.
 */
export class PgSide {
  private constructor(
    readonly database: PgDatabase,
    readonly writerPool: pg.Pool,
    readonly readerPool: pg.Pool,
    readonly writer: PgStateStore,
    readonly reader: PgStateStore,
    private readonly backends: number[],
  ) {}

  static async open(withPartitionIndex: boolean): Promise<PgSide> {
    const database = await createPgDatabase(
      withPartitionIndex ? [...statePgMigrations, partitionIndexMigration] : statePgMigrations,
    );
    const pool = (): pg.Pool => new pg.Pool({ connectionString: database.url, max: 1, idleTimeoutMillis: 0 });
    const writerPool = pool();
    const readerPool = pool();
    const backends: number[] = [];
    for (const p of [writerPool, readerPool])
      backends.push((await p.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid);
    return new PgSide(
      database,
      writerPool,
      readerPool,
      await PgStateStore.open(writerPool),
      await PgStateStore.open(readerPool),
      backends,
    );
  }

  /** CPU seconds of the writer's and the reader's server backends (the server runs on this machine). */
  serverCpuSeconds(): number {
    return this.backends.reduce((sum, pid) => sum + statCpuSeconds(`/proc/${pid}/stat`), 0);
  }

  /** The new owner's read of the things of `partitions` only, as a store loading by partition would make it. */
  async readPartitions(partitions: readonly number[]): Promise<Map<string, ThingState>> {
    const { rows } = await this.readerPool.query<ThingRow>(SELECT_BY_SOURCE, [partitions.map(sourceOf)]);
    const states = new Map<string, ThingState>();
    for (const r of rows) states.set(r.thing_name, fromRow(r));
    return states;
  }

  /** The plan's top node for `readPartitions` (e.g. Seq Scan, Bitmap Heap Scan). */
  async plan(partitions: readonly number[]): Promise<string> {
    const { rows } = await this.readerPool.query<{ "QUERY PLAN": [{ Plan: { "Node Type": string } }] }>(
      `EXPLAIN (FORMAT JSON) ${SELECT_BY_SOURCE}`,
      [partitions.map(sourceOf)],
    );
    return rows[0]!["QUERY PLAN"][0].Plan["Node Type"];
  }

  /** Fresh statistics, as autovacuum would have them by the time of a hand-over. */
  async analyze(): Promise<void> {
    await this.writerPool.query("VACUUM ANALYZE engine_thing_state");
  }

  /** Bytes of the table with its indexes and TOAST. */
  async tableBytes(): Promise<number> {
    const { rows } = await this.writerPool.query<{ bytes: string }>(
      "SELECT pg_total_relation_size('engine_thing_state') AS bytes",
    );
    return Number(rows[0]!.bytes);
  }

  async drop(): Promise<void> {
    await this.writer.close();
    await this.reader.close();
    await this.writerPool.end();
    await this.readerPool.end();
    await this.database.drop();
  }
}
