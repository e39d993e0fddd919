import type { Statement } from "better-sqlite3";
import type { Db, Migration } from "../store/index.js";
import { DayColumns, type StoredColumns, type StoredRow } from "./columns.js";
import { StreamHoles } from "./holes.js";
import { DOCUMENT_SQL, documents, type ObservationColumns } from "./rows.js";

export const DAY_MS = 86_400_000;
/**
 * How long after its day ends a partition may still take most of its rows (late
 * devices, clock skew, a consumer catching up): its thing index is built after that.
 */
export const CLOSE_GRACE_MS = 2 * 3_600_000;
/** Days whose column cache a maintenance pass after a batch builds at most (a forced one builds all). */
export const COLUMN_DAYS_PER_PASS = 1;
/** Rows of a day past which it gets no column cache: about 56 bytes a row, so some 110 MB. */
export const COLUMN_MAX_ROWS = 2_000_000;
/** How often the writer looks for closed partitions to index. */
export const MAINTAIN_EVERY_MS = 60_000;

/**
 * The observation file's own tables: the catalog of day partitions, the id
 * sequence shared by every partition (an id is unique across them: FIND's
 * `_id`, the export's paging key), and the marks of each replayable stream.
 */
export const partitionMigrations: Migration[] = [
  {
    id: "observations-partitions-001",
    up: `
      CREATE TABLE observation_partitions (
        day INTEGER PRIMARY KEY,
        -- 1 once the thing index exists: built when the day has closed, in one sort, not row by row.
        indexed INTEGER NOT NULL DEFAULT 0
      );
      CREATE TABLE observation_ids (one INTEGER PRIMARY KEY CHECK (one = 1), next INTEGER NOT NULL);
      INSERT INTO observation_ids VALUES (1, 1);
      -- Per replayable stream (kafka:<topic>:<partition>), the last offset stored: a replay stores nothing twice.
      CREATE TABLE observation_marks (stream TEXT PRIMARY KEY, offset INTEGER NOT NULL);
    `,
  },
  {
    id: "observations-partitions-002",
    // Bumped by every delete of a day's rows short of dropping the day: a reader's column
    // cache of the day (reader.ts) is stale then; rows added take larger ids, which it sees.
    up: "ALTER TABLE observation_partitions ADD COLUMN deletions INTEGER NOT NULL DEFAULT 0",
  },
  {
    id: "observations-partitions-003",
    // A closed day's column cache (columns.ts), built beside the writer (columns-thread.ts), with the token of the rows it was built from.
    up: "CREATE TABLE observation_columns (day INTEGER PRIMARY KEY, token TEXT NOT NULL, layout TEXT NOT NULL, data BLOB NOT NULL)",
  },
];

/** Prepares a statement, or answers one prepared before: the reader keeps them, the writer does not need to. */
export type Prepare = (sql: string) => Statement;

/**
 * What a day's columns were built from: the day's smallest and largest ids and its count of
 * partial deletions (retention's). Rows stored late into a closed day take larger ids from the
 * shared sequence, so columns built up to `maxId` still answer every row up to it exactly while
 * `deletions` and `minId` are unchanged (a day dropped whole and made again by a late row starts
 * past every id it had); the rows after `maxId` are read from the table beside them.
 */
export interface ColumnsToken {
  minId: number;
  maxId: number;
  deletions: number;
}

/** The day's token now, or undefined for a day without rows. */
export function columnsToken(prepare: Prepare, day: number): ColumnsToken | undefined {
  const table = partitionTable(day);
  // Two subqueries: SQLite answers each of min and max from the rowid's ends, not both in one.
  const [minId, maxId] = prepare(`SELECT (SELECT min(id) FROM ${table}), (SELECT max(id) FROM ${table})`)
    .raw(true)
    .get() as [number | null, number | null];
  if (minId === null || maxId === null) return undefined;
  const [deletions] = prepare("SELECT deletions FROM observation_partitions WHERE day = ?").raw(true).get(day) as [
    number,
  ];
  return { minId, maxId, deletions };
}

/** As stored beside the columns: `maxId:deletions:minId`. */
function tokenText({ minId, maxId, deletions }: ColumnsToken): string {
  return `${maxId}:${deletions}:${minId}`;
}

function parseToken(text: string): ColumnsToken | undefined {
  const [maxId, deletions, minId] = text.split(":").map(Number);
  // A token of an earlier version (no minId) names no base: its day is built again.
  if (minId === undefined || !Number.isSafeInteger(minId)) return undefined;
  return { minId, maxId: maxId!, deletions: deletions! };
}

/** Whether columns built at `base` answer every row up to `base.maxId` of the day at `now`. */
export function answersUpTo(base: ColumnsToken, now: ColumnsToken): boolean {
  return base.deletions === now.deletions && base.minId === now.minId && base.maxId <= now.maxId;
}

/**
 * A closed day's columns are built again once its late rows (stored after the columns were
 * built: read from the table beside them) pass this share of the rows the columns hold. A device
 * trickling rows into yesterday then costs each query over yesterday a few rows' JSON, not a
 * rebuild of the day every time one arrives.
 */
export const LATE_ROWS_SHARE = 1 / 16;

/** Rows stored into the day after `maxId`: the late rows a column base does not hold. */
export function lateRows(prepare: Prepare, day: number, maxId: number): number {
  return (
    prepare(`SELECT count(*) FROM ${partitionTable(day)} WHERE id > ?`)
      .raw(true)
      .get(maxId) as [number]
  )[0];
}

/** Rows of a day's table. */
function dayRowCount(prepare: Prepare, day: number): number {
  return (
    prepare(`SELECT count(*) FROM ${partitionTable(day)}`)
      .raw(true)
      .get() as [number]
  )[0];
}

/**
 * Takes a day apart into columns, in ts order (call it inside a transaction: the count and rows
 * must agree); `count` when the caller has read it in that transaction already.
 */
export function buildColumns(
  prepare: Prepare,
  day: number,
  tick: () => void,
  count = dayRowCount(prepare, day),
): DayColumns {
  const table = partitionTable(day);
  const rows = prepare(`SELECT id, ts, thing_type, thing_name, ${DOCUMENT_SQL} FROM ${table} ORDER BY ts`)
    .raw(true)
    .iterate() as IterableIterator<StoredRow>;
  return DayColumns.build(rows, count, tick);
}

/**
 * The columns the writer stored for a day, with what they were built from, when they answer
 * the day's rows up to their `maxId` (`answersUpTo`) and hold more of them than `after`.
 */
export function storedColumns(
  prepare: Prepare,
  day: number,
  now: ColumnsToken,
  after = -Infinity,
): { token: ColumnsToken; columns: DayColumns } | undefined {
  const stored = prepare("SELECT token FROM observation_columns WHERE day = ?").raw(true).get(day) as
    [string] | undefined;
  const token = stored && parseToken(stored[0]);
  if (token === undefined || !answersUpTo(token, now) || token.maxId <= after) return undefined;
  const row = prepare("SELECT layout, data FROM observation_columns WHERE day = ?").raw(false).get(day) as
    StoredColumns | undefined;
  return row ? { token, columns: DayColumns.fromStored(row) } : undefined;
}

/**
 * Stores the column cache of closed days that have none, or whose columns no longer answer
 * their rows (retention deleted some), or whose late rows passed `LATE_ROWS_SHARE` of them
 * (any late row when `force`d), newest first, at most `days` of them: a pass takes a day's
 * worth of parsing (about a second for 166,000 rows), not every day of a store upgraded or
 * loaded in bulk at once. A day is read in a read transaction (a snapshot: the writer goes on
 * inserting) and its columns written in a short one with the token of that snapshot; rows that
 * come meanwhile are late rows to the readers. Days of more than `COLUMN_MAX_ROWS` rows are
 * left to the rows: their columns would not fit a reader's cache. Answers the days stored.
 */
export function storeDayColumns(db: Db, days: number, force = false): number {
  const prepare: Prepare = (sql) => db.prepare(sql);
  const closedDays = db
    .prepare<[], { day: number; token: string | null }>(
      `SELECT p.day, c.token FROM observation_partitions p LEFT JOIN observation_columns c ON c.day = p.day
       WHERE p.indexed = 1 ORDER BY p.day DESC`,
    )
    .all();
  const store = db.prepare<[number, string, string, Buffer]>(
    "INSERT OR REPLACE INTO observation_columns (day, token, layout, data) VALUES (?, ?, ?, ?)",
  );
  let built = 0;
  for (const { day, token } of closedDays) {
    if (built >= days) break;
    const snapshot = db.transaction(() => {
      const current = columnsToken(prepare, day);
      if (current === undefined) return undefined;
      const stored = token === null ? undefined : parseToken(token);
      // The stored columns, when they still answer the day's rows up to their last id.
      const base = stored !== undefined && answersUpTo(stored, current) ? stored : undefined;
      // Columns up to date need no count of the day's rows: a pass over every closed day reads none.
      if (base?.maxId === current.maxId) return undefined;
      const count = dayRowCount(prepare, day);
      if (base !== undefined) {
        const late = lateRows(prepare, day, base.maxId);
        if (!force && late <= (count - late) * LATE_ROWS_SHARE) return undefined;
      }
      if (count > COLUMN_MAX_ROWS) return undefined;
      return { token: tokenText(current), ...buildColumns(prepare, day, () => {}, count).toStored() };
    })();
    if (snapshot === undefined) continue;
    store.run(day, snapshot.token, snapshot.layout, snapshot.data);
    built++;
  }
  return built;
}

/** The table of a UTC day (days since the epoch; negative before 1970). */
export function partitionTable(day: number): string {
  return day < 0 ? `observations_dm${-day}` : `observations_d${day}`;
}

export function dayOf(ts: number): number {
  return Math.floor(ts / DAY_MS);
}

/** The days of the catalog that may hold rows with a timestamp in [from, to], ascending: one statement, prepared once. */
export function partitionDays(db: Db): (from: number, to: number) => number[] {
  const daysIn = db.prepare<[number, number], { day: number }>(
    "SELECT day FROM observation_partitions WHERE day >= ? AND day <= ? ORDER BY day",
  );
  return (from, to) => (from > to ? [] : daysIn.all(dayOf(from), dayOf(to)).map((r) => r.day));
}

/**
 * Observations in one table per UTC day of their timestamp. Why days:
 * - the insert of a stream pays for two indexes that take rows in order
 *   ((thing_type, ts): a hundred or so insertion points; ts: the right edge),
 *   not for the (thing_name, ts) index, whose inserts land all over its
 *   B-tree (measured: three times the cost of the row). A day gets that index
 *   when it has closed, built in one sort; until then, reads by thing of the
 *   open day go through the type and time indexes;
 * - retention drops whole days (a DROP TABLE frees pages without touching
 *   rows or indexes) and deletes only the rows of the one day the cutoff cuts;
 * - a query reads only the days it spans.
 * Synchronous, on one connection: the writer thread and the in-process store run it alike.
 */
export class ObservationPartitions {
  /** Insert statements by day; a day's first one in this process makes sure its table exists. */
  private readonly inserts = new Map<number, Statement>();
  /** Days that may hold rows in [from, to], ascending. */
  readonly days: (from: number, to: number) => number[];
  private readonly markOf: Statement<[string], { offset: number }>;
  private readonly setMark: Statement<[string, number]>;
  private readonly reserve: Statement<[number], { next: number }>;
  private lastMaintained = 0;
  private readonly holes = new StreamHoles();

  constructor(
    private readonly db: Db,
    private readonly clock: () => number = Date.now,
    /** Whether `maintain` builds the column cache of closed days (false: another thread does). */
    private readonly columnsInline = true,
  ) {
    this.markOf = db.prepare("SELECT offset FROM observation_marks WHERE stream = ?");
    this.setMark = db.prepare(
      "INSERT INTO observation_marks (stream, offset) VALUES (?, ?) ON CONFLICT(stream) DO UPDATE SET offset = excluded.offset",
    );
    this.reserve = db.prepare("UPDATE observation_ids SET next = next + ? RETURNING next");
    this.days = partitionDays(db);
    // The first look a minute after start: a bulk load right after start is not indexed row by row.
    this.lastMaintained = clock();
  }

  /**
   * Stores a batch in one transaction; a row of a replayable stream at or below
   * the stream's mark was stored before (a replay after a crash) and is skipped.
   * Answers the rows stored.
   */
  insert(rows: ObservationColumns): number {
    this.holes.check(rows);
    let stored: number;
    try {
      stored = this.write(rows);
    } catch (err) {
      this.holes.record(rows);
      throw err;
    }
    this.maintain();
    return stored;
  }

  private write(rows: ObservationColumns): number {
    return this.db.transaction(() => {
      // The last offset stored per stream of the batch, by its index in `rows.streams`.
      const marks: (number | undefined)[] = [];
      const keep: number[] = [];
      for (let i = 0; i < rows.count; i++) {
        const s = rows.stream[i]!;
        if (s < 0) {
          keep.push(i);
          continue;
        }
        const offset = rows.offset[i]!;
        const mark = (marks[s] ??= this.markOf.get(rows.streams[s]!)?.offset ?? -1);
        if (offset <= mark) continue;
        marks[s] = offset;
        keep.push(i);
      }
      if (keep.length === 0) return 0;
      // Ids from the shared sequence, reserved under the write lock: writers in other processes get others.
      let id = this.reserve.get(keep.length)!.next - keep.length;
      const doc = documents(rows);
      for (const i of keep) {
        const ts = rows.ts[i]!;
        const day = dayOf(ts);
        const args = [
          id++,
          rows.thingName[i],
          rows.thingTypes[rows.thingType[i]!],
          rows.domains[rows.domain[i]!],
          ts,
          doc(i),
        ] as const;
        try {
          this.insertStatement(day).run(...args);
        } catch (err) {
          // Another process's retention dropped the day (a late row older than the window): made again.
          if (!(err instanceof Error && /no such table/.test(err.message))) throw err;
          this.inserts.delete(day);
          this.insertStatement(day).run(...args);
        }
      }
      for (let s = 0; s < marks.length; s++) {
        const offset = marks[s];
        if (offset !== undefined) this.setMark.run(rows.streams[s]!, offset);
      }
      return keep.length;
    })();
  }

  count(): number {
    let n = 0;
    for (const day of this.days(-Infinity, Infinity)) {
      n += this.db.prepare<[], { n: number }>(`SELECT count(*) AS n FROM ${partitionTable(day)}`).get()!.n;
    }
    return n;
  }

  /**
   * Deletes up to `limit` rows older than `cutoff` (epoch ms): whole days first
   * (each dropped at once, however large, and counted whole), then rows of the
   * day the cutoff falls in, oldest first. Answers the rows deleted.
   */
  deleteOlderThan(cutoff: number, limit: number): number {
    let deleted = 0;
    for (const day of this.days(-Infinity, cutoff)) {
      const table = partitionTable(day);
      if ((day + 1) * DAY_MS <= cutoff) {
        this.db.transaction(() => {
          deleted += this.db.prepare<[], { n: number }>(`SELECT count(*) AS n FROM ${table}`).get()!.n;
          this.db.exec(`DROP TABLE ${table}`);
          this.db.prepare("DELETE FROM observation_partitions WHERE day = ?").run(day);
          this.db.prepare("DELETE FROM observation_columns WHERE day = ?").run(day);
        })();
        this.inserts.delete(day);
        continue;
      }
      this.db.transaction(() => {
        const changes = this.db
          .prepare<[number, number]>(
            `DELETE FROM ${table} WHERE rowid IN (SELECT rowid FROM ${table} WHERE ts < ? ORDER BY ts LIMIT ?)`,
          )
          .run(cutoff, Math.max(0, limit - deleted)).changes;
        if (changes > 0)
          this.db.prepare("UPDATE observation_partitions SET deletions = deletions + 1 WHERE day = ?").run(day);
        deleted += changes;
      })();
    }
    return deleted;
  }

  /**
   * Builds the thing index of every day closed since the last look. Runs after a
   * batch at most once a minute (or when forced), so a day's index is built once,
   * by the writer; until then a day's reads by thing go through its type index.
   * The closed days' column cache is built here too when this store builds it
   * inline (in process); beside the writer thread, a thread of its own builds it
   * (`columns-thread.ts`), so that a day's parse never holds the inserts up.
   * Forced (tests, benches, tools), every closed day's columns are built here.
   */
  maintain(force = false): void {
    const now = this.clock();
    if (!force && now - this.lastMaintained < MAINTAIN_EVERY_MS) return;
    this.lastMaintained = now;
    const open = this.db.prepare<[], { day: number }>("SELECT day FROM observation_partitions WHERE indexed = 0").all();
    for (const { day } of open) if (closed(day, now)) this.indexThings(day);
    if (force) storeDayColumns(this.db, Infinity, true);
    else if (this.columnsInline) storeDayColumns(this.db, COLUMN_DAYS_PER_PASS);
  }

  private insertStatement(day: number): Statement {
    let statement = this.inserts.get(day);
    if (statement === undefined) {
      this.create(day);
      statement = this.db.prepare(
        `INSERT INTO ${partitionTable(day)} (id, thing_name, thing_type, domain, ts, doc) VALUES (?, ?, ?, ?, ?, ?)`,
      );
      this.inserts.set(day, statement);
    }
    return statement;
  }

  private create(day: number): void {
    const table = partitionTable(day);
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS ${table} (
        id INTEGER PRIMARY KEY,
        thing_name TEXT NOT NULL,
        thing_type TEXT NOT NULL,
        domain TEXT NOT NULL,
        ts INTEGER NOT NULL,
        doc TEXT NOT NULL
      );
      CREATE INDEX IF NOT EXISTS ${table}_ts ON ${table}(ts);
      CREATE INDEX IF NOT EXISTS ${table}_type_ts ON ${table}(thing_type, ts);
    `);
    this.db.prepare("INSERT OR IGNORE INTO observation_partitions (day) VALUES (?)").run(day);
    // A day that closed already (history loaded in bulk, a late device) is indexed by the next
    // maintenance too, after its rows: one sort rather than an insert per row into the index.
  }

  private indexThings(day: number): void {
    const table = partitionTable(day);
    this.db.transaction(() => {
      this.db.exec(`CREATE INDEX IF NOT EXISTS ${table}_thing_ts ON ${table}(thing_name, ts)`);
      this.db.prepare("UPDATE observation_partitions SET indexed = 1 WHERE day = ?").run(day);
    })();
  }
}

function closed(day: number, now: number): boolean {
  return (day + 1) * DAY_MS + CLOSE_GRACE_MS <= now;
}
