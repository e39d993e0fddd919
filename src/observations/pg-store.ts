import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { from as copyFrom } from "pg-copy-streams";
import {
  pgCopyField as copyField,
  pgTransaction,
  type PgMigration,
  type PgPool,
  type PgQueryable,
} from "../store/index.js";
import { StreamHoles } from "./holes.js";
import { DAY_MS, dayOf, partitionTable } from "./partitions.js";
import { documents, toColumns, type ObservationColumns } from "./rows.js";
import type { ObservationStore } from "./store.js";
import type { StoredObservationInput } from "./types.js";

/**
 * One table of observations partitioned by UTC day of `ts` (declarative partitioning: a day is
 * a table `observations_d<day>`, as in the SQLite file), the id sequence every partition shares
 * (FIND's `_id`, the export's paging key), and the marks of each replayable stream. `doc` holds
 * the text the SQLite store holds, so `DOCUMENT_SQL` reads it back the same on both.
 */
export const observationPgMigrations: PgMigration[] = [
  {
    id: "observations-pg-001",
    up: `
      CREATE SEQUENCE observation_ids;
      CREATE TABLE observations (
        id BIGINT NOT NULL DEFAULT nextval('observation_ids'),
        thing_name TEXT NOT NULL,
        thing_type TEXT NOT NULL,
        domain TEXT NOT NULL,
        ts BIGINT NOT NULL,
        doc TEXT NOT NULL,
        PRIMARY KEY (id, ts)
      ) PARTITION BY RANGE (ts);
      CREATE INDEX observations_type_ts ON observations (thing_type, ts);
      CREATE INDEX observations_thing_ts ON observations (thing_name, ts);
      CREATE TABLE observation_marks (stream TEXT PRIMARY KEY, "offset" BIGINT NOT NULL);
    `,
  },
];

/** Days past today whose partitions exist before their first row: the write path rarely makes one. */
const DAYS_AHEAD = 1;
/** Arbitrary key of the advisory lock under which processes create and drop partitions one at a time. */
const PARTITION_LOCK = 0x646d7370;
/** SQLSTATE of a row no partition takes (its day was dropped by another process's retention meanwhile). */
const NO_PARTITION = "23514";
/** Bytes of COPY text handed to the connection at a time. */
const COPY_CHUNK = 1 << 20;

/**
 * Observations in PostgreSQL, for processes sharing one database. A batch is one transaction:
 * the marks of its streams read and locked, the rows past them sent with one COPY (ids taken
 * from the shared sequence in the batch's order), the marks moved; never a round trip a row.
 * Partitions are made ahead (today and the next day, at open and on `maintain`) and on demand
 * for a day that has none, in a short transaction of their own; retention drops whole days.
 */
export class PgObservationStore implements ObservationStore {
  /** Days known to have a partition: a batch of known days issues no DDL. */
  private readonly days = new Set<number>();
  private readonly holes = new StreamHoles();

  private constructor(
    private readonly pool: PgPool,
    private readonly clock: () => number,
  ) {}

  /** A store over a database migrated with `observationPgMigrations`; today's partitions made. */
  static async open(pool: PgPool, clock: () => number = Date.now): Promise<PgObservationStore> {
    const store = new PgObservationStore(pool, clock);
    await store.maintain();
    return store;
  }

  async insertBatch(inputs: readonly StoredObservationInput[]): Promise<void> {
    await this.insertColumns(toColumns(inputs));
  }

  async insertColumns(rows: ObservationColumns): Promise<void> {
    if (rows.count === 0) return;
    this.holes.check(rows);
    try {
      await this.write(rows);
    } catch (err) {
      this.holes.record(rows);
      throw err;
    }
  }

  private async write(rows: ObservationColumns, retried = false): Promise<void> {
    const days = new Set<number>();
    for (let i = 0; i < rows.count; i++) days.add(dayOf(rows.ts[i]!));
    await this.ensureDays(days);
    try {
      await pgTransaction(this.pool, async (tx) => {
        const { keep, marks } = await this.pastMarks(tx, rows);
        if (keep.length === 0) return;
        await pipeline(Readable.from(copyText(rows, keep)), tx.query(copyFrom(COPY_SQL)));
        if (marks.size > 0)
          await tx.query(
            `INSERT INTO observation_marks (stream, "offset") SELECT * FROM unnest($1::text[], $2::bigint[])
             ON CONFLICT (stream) DO UPDATE SET "offset" = excluded."offset"`,
            [[...marks.keys()], [...marks.values()]],
          );
      });
    } catch (err) {
      if (retried || (err as { code?: string }).code !== NO_PARTITION) throw err;
      // Another process's retention dropped a day this one knew: made again, once.
      this.days.clear();
      await this.write(rows, true);
    }
  }

  /**
   * The rows of the batch past their stream's mark (a replay after a crash hands rows over
   * again: stored once), and each stream's new mark. The marks are locked until the batch commits.
   */
  private async pastMarks(
    tx: PgQueryable,
    rows: ObservationColumns,
  ): Promise<{ keep: number[]; marks: Map<string, number> }> {
    const stored = new Map<string, number>();
    if (rows.streams.length > 0) {
      const { rows: found } = await tx.query<{ stream: string; offset: string }>(
        `SELECT stream, "offset" FROM observation_marks WHERE stream = ANY($1::text[]) FOR UPDATE`,
        [rows.streams],
      );
      for (const r of found) stored.set(r.stream, Number(r.offset));
    }
    const marks = new Map<string, number>();
    const keep: number[] = [];
    for (let i = 0; i < rows.count; i++) {
      const s = rows.stream[i]!;
      if (s >= 0) {
        const stream = rows.streams[s]!;
        const offset = rows.offset[i]!;
        if (offset <= (marks.get(stream) ?? stored.get(stream) ?? -1)) continue;
        marks.set(stream, offset);
      }
      keep.push(i);
    }
    return { keep, marks };
  }

  /** Makes the partitions of `days` that this process does not know to exist. */
  private async ensureDays(days: Iterable<number>): Promise<void> {
    const missing = [...days].filter((d) => !this.days.has(d));
    if (missing.length === 0) return;
    await pgTransaction(this.pool, (tx) => createDayPartitions(tx, missing));
    for (const day of missing) this.days.add(day);
  }

  /** The partitions there are, ascending by day. */
  private async partitionDays(): Promise<number[]> {
    const { rows } = await this.pool.query<{ name: string }>(
      `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
       WHERE i.inhparent = 'observations'::regclass`,
    );
    return rows.map((r) => dayOfTable(r.name)).sort((a, b) => a - b);
  }

  /**
   * Whole days older than `cutoff` are dropped (counted whole, however large); then up to
   * the rest of `limit` rows of the day the cutoff falls in, oldest first.
   */
  async deleteOlderThan(cutoff: number, limit: number): Promise<number> {
    let deleted = 0;
    for (const day of await this.partitionDays()) {
      if (day * DAY_MS >= cutoff) break;
      const table = partitionTable(day);
      if ((day + 1) * DAY_MS <= cutoff) {
        deleted += await pgTransaction(this.pool, async (tx) => {
          await tx.query("SELECT pg_advisory_xact_lock($1)", [PARTITION_LOCK]);
          const { rows } = await tx.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`);
          await tx.query(`DROP TABLE ${table}`);
          return Number(rows[0]!.n);
        });
        this.days.delete(day);
        continue;
      }
      const { rowCount } = await this.pool.query(
        `DELETE FROM ${table} WHERE ctid IN (SELECT ctid FROM ${table} WHERE ts < $1 ORDER BY ts LIMIT $2)`,
        [cutoff, Math.max(0, limit - deleted)],
      );
      deleted += rowCount ?? 0;
    }
    return deleted;
  }

  async count(): Promise<number> {
    const { rows } = await this.pool.query<{ n: string }>("SELECT count(*) AS n FROM observations");
    return Number(rows[0]!.n);
  }

  /** Makes the partitions of today and the days ahead, so that the write path seldom waits on DDL. */
  async maintain(): Promise<void> {
    const today = dayOf(this.clock());
    await this.ensureDays(Array.from({ length: DAYS_AHEAD + 1 }, (_, i) => today + i));
  }

  /** The pool is the caller's. */
  async close(): Promise<void> {}
}

/**
 * Makes the partitions of `days` that do not exist, in the caller's transaction, under the lock
 * that keeps processes creating and dropping partitions one at a time.
 */
export async function createDayPartitions(tx: PgQueryable, days: Iterable<number>): Promise<void> {
  await tx.query("SELECT pg_advisory_xact_lock($1)", [PARTITION_LOCK]);
  for (const day of days)
    await tx.query(
      `CREATE TABLE IF NOT EXISTS ${partitionTable(day)} PARTITION OF observations
       FOR VALUES FROM (${day * DAY_MS}) TO (${(day + 1) * DAY_MS})`,
    );
}

const COPY_SQL = "COPY observations (thing_name, thing_type, domain, ts, doc) FROM STDIN";

/** The kept rows as COPY's text format, in chunks of about `COPY_CHUNK` characters. */
function* copyText(rows: ObservationColumns, keep: readonly number[]): Generator<string> {
  const doc = documents(rows);
  let chunk = "";
  for (const i of keep) {
    chunk += `${copyField(rows.thingName[i]!)}\t${copyField(rows.thingTypes[rows.thingType[i]!]!)}\t${copyField(
      rows.domains[rows.domain[i]!]!,
    )}\t${rows.ts[i]!}\t${copyField(doc(i))}\n`;
    if (chunk.length >= COPY_CHUNK) {
      yield chunk;
      chunk = "";
    }
  }
  if (chunk) yield chunk;
}

/** The day of a partition's table name (`partitionTable`'s inverse). */
function dayOfTable(name: string): number {
  return name.startsWith("observations_dm") ? -Number(name.slice(15)) : Number(name.slice(14));
}
