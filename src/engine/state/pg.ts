import { pgTransaction, type PgMigration, type PgPool } from "../../store/index.js";
import { fromRow, stateDoc, type ThingRow } from "./doc.js";
import { MemoryStateStore } from "./memory.js";
import type { ThingState } from "./store.js";

/** The engine's state in PostgreSQL: one row a thing, as the SQLite table holds it. */
export const statePgMigrations: PgMigration[] = [
  {
    id: "engine-pg-001-state",
    up: `
      CREATE TABLE engine_thing_state (
        thing_name TEXT PRIMARY KEY,
        ts BIGINT NOT NULL,
        seq BIGINT NOT NULL,
        last_source TEXT,
        last_offset BIGINT,
        -- {state, nested?, thresholds?}: the document SqliteStateStore writes.
        doc TEXT NOT NULL
      );
    `,
  },
];

/** Rows one upsert statement carries: a checkpoint's slice is one statement or a few, never one a thing. */
const ROWS_PER_STATEMENT = 10_000;

/** A checkpoint's rows as columns, made when `flush` is called: the engine goes on changing the states. */
interface StateColumns {
  thingName: string[];
  ts: number[];
  seq: number[];
  lastSource: (string | null)[];
  lastOffset: (number | null)[];
  doc: string[];
}

/**
 * State kept in memory and checkpointed to PostgreSQL on `flush`: the slice's rows serialized
 * during the call, then written as one upsert of `unnest`ed arrays per `ROWS_PER_STATEMENT`
 * rows in one transaction. Flushes are written one after another, in the order made. Loaded
 * whole at `open`, and again at `reload` (a rebalance, a failed batch), once the flushes
 * handed over before it are written: memory then holds the durable state, so `thing` stays a
 * lookup in memory.
 */
export class PgStateStore extends MemoryStateStore {
  /** The last flush handed over: settled, every flush before it is too. */
  private written: Promise<void> = Promise.resolve();

  private constructor(private readonly pool: PgPool) {
    super();
  }

  /** A store over a database migrated with `statePgMigrations`, its rows loaded. */
  static async open(pool: PgPool): Promise<PgStateStore> {
    const store = new PgStateStore(pool);
    await store.load();
    return store;
  }

  /** Memory becomes the table: read whole first, so that a read that fails leaves memory as it was. */
  private async load(): Promise<void> {
    const { rows } = await this.pool.query<ThingRow>(
      `SELECT thing_name, ts::float8 AS ts, seq::float8 AS seq, last_source, last_offset::float8 AS last_offset, doc
       FROM engine_thing_state`,
    );
    this.things.clear();
    this.dirty.clear();
    for (const r of rows) this.things.set(r.thing_name, fromRow(r));
  }

  override flush(changed: readonly ThingState[]): Promise<void> | void {
    if (changed.length === 0 && this.dirty.size === 0) return;
    const things = new Set<ThingState>(changed);
    for (const t of this.dirty) things.add(t);
    const columns: StateColumns = { thingName: [], ts: [], seq: [], lastSource: [], lastOffset: [], doc: [] };
    for (const t of things) {
      columns.thingName.push(t.thingName);
      columns.ts.push(t.timestamp);
      columns.seq.push(t.seq ?? 0);
      columns.lastSource.push(t.lastSource ?? null);
      columns.lastOffset.push(t.lastOffset ?? null);
      columns.doc.push(stateDoc(t));
    }
    super.flush(changed);
    const writing = this.written.catch(() => undefined).then(() => this.upsert(columns));
    this.written = writing;
    return writing;
  }

  private upsert(c: StateColumns): Promise<void> {
    return pgTransaction(this.pool, async (tx) => {
      for (let from = 0; from < c.thingName.length; from += ROWS_PER_STATEMENT) {
        const to = from + ROWS_PER_STATEMENT;
        await tx.query(
          `INSERT INTO engine_thing_state (thing_name, ts, seq, last_source, last_offset, doc)
           SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::text[], $5::bigint[], $6::text[])
           ON CONFLICT (thing_name) DO UPDATE SET ts = excluded.ts, seq = excluded.seq,
             last_source = excluded.last_source, last_offset = excluded.last_offset, doc = excluded.doc`,
          [
            c.thingName.slice(from, to),
            c.ts.slice(from, to),
            c.seq.slice(from, to),
            c.lastSource.slice(from, to),
            c.lastOffset.slice(from, to),
            c.doc.slice(from, to),
          ],
        );
      }
    });
  }

  /** Once the flushes handed over are written (or failed), so that the table is read as they left it. */
  async reload(): Promise<void> {
    await this.written.catch(() => undefined);
    await this.load();
  }

  /** Once the flushes handed over are written; the pool is the caller's. */
  async close(): Promise<void> {
    await this.written.catch(() => undefined);
  }
}
