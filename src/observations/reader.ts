import { LRUCache } from "lru-cache";
import type { Db } from "../store/index.js";
import type { Statement } from "better-sqlite3";
import { DayColumns } from "./columns.js";
import {
  answersUpTo,
  buildColumns,
  columnsToken,
  dayOf,
  partitionDays,
  partitionTable,
  storedColumns,
  type ColumnsToken,
  type Prepare,
} from "./partitions.js";
import { DOCUMENT_SQL } from "./rows.js";

/** A stored row as FIND reads it: id, thing type, document JSON. */
export type CandidateRow = [id: number, thingType: string, doc: string];

/** A row of an export page: id, timestamp, thing name, document JSON. */
export type ExportRow = [id: number, ts: number, thingName: string, doc: string];

/**
 * A row of an export page as any reader answers it: its id is the reader's own (a row id in the
 * databases, a document id in OpenSearch), which goes back to the reader in `ExportPosition`.
 */
export type ExportPageRow = [id: number | string, ts: number, thingName: string, doc: string];

/** Where the next export page starts: after the row of this timestamp and id, in (ts, id) order. */
export interface ExportPosition {
  ts: number;
  id: number | string;
}

/** What exports read of the observations: a database's reader (`ObservationReader`), or OpenSearch's. */
export interface ExportReader {
  /** One page of an export in (ts, id) order after the given position, so a long export reads in short requests. */
  exportPage(
    scope: { thingType?: string; things?: readonly string[] },
    from: number,
    to: number,
    after: ExportPosition,
    limit: number,
  ): Promise<ExportPageRow[]>;
}

export interface CandidateFilter {
  tsFrom: number;
  tsTo: number;
  /** Never empty: the caller answers an empty scope without asking the store. */
  thingTypes: readonly string[];
  thingNames?: readonly string[];
}

/**
 * What a scan hands each candidate to. Rows of the open day (and of any day when
 * the visitor reads whole documents) come as JSON text; rows of a closed day
 * whose column cache answers `paths` come as their documents cut down to them.
 */
export interface CandidateVisitor {
  /** The document paths the visitor reads, or undefined when it needs whole documents. */
  readonly paths: ReadonlySet<string> | undefined;
  row(id: number, thingType: string, json: string): void;
  projected(id: number, thingType: string, source: Record<string, unknown>): void;
  /** Called while long work runs (taking a day apart into columns): throws to stop it. */
  tick(): void;
  /** Milliseconds left of the query's time budget: a reader that waits on a server bounds its statements by it. */
  remainingMs(): number;
}

/** The rows of one closed day in a window: `from` to `end` (excluded) of its columns, still to be cut by thing type and name. */
export interface ColumnDay {
  columns: DayColumns;
  from: number;
  end: number;
}

/** Documents by id as JSON text, read from the scan's snapshot (the hits of a page). */
export type DocumentLoader = (ids: readonly number[]) => Map<number, string>;

/**
 * What FIND and exports read of the observation store, one implementation per backend
 * (`SqliteObservationReader`, `PgObservationReader`), opened by `openObservationReader`
 * from a `ReaderSource` (a FIND thread opens its own). Rows stream to a visitor that
 * checks its time budget on each; the filters of `CandidateFilter` are all a reader
 * applies, and it applies them exactly: the query tests every other clause.
 */
export interface ObservationReader extends ExportReader {
  /** Rows in the window and scope, at most `limit` (unordered). */
  candidates(f: CandidateFilter, limit: number): Promise<CandidateRow[]>;
  /**
   * Streams every candidate in the window and scope to `visitor` (unordered), then
   * asks `pick` for the ids whose whole documents the answer needs and answers them
   * as JSON text by id, in one read transaction: every day read from the same
   * snapshot, none dropped half-way by retention.
   */
  scan(f: CandidateFilter, visitor: CandidateVisitor, pick: () => readonly number[]): Promise<Map<number, string>>;
  /**
   * The window as slices of closed days' columns when every day it spans is closed
   * and its columns answer `paths` exactly, `answer` then called in the same read
   * transaction; undefined otherwise (the caller scans). Readers without columns leave it out.
   */
  columnScan?<T>(
    f: CandidateFilter,
    paths: ReadonlySet<string>,
    tick: () => void,
    answer: (days: ColumnDay[], documents: DocumentLoader) => T,
  ): T | undefined;
  /** One page of an export in (ts, id) order after the given position, so a long export reads in short statements. */
  exportPage(
    scope: { thingType?: string; things?: readonly string[] },
    from: number,
    to: number,
    after: ExportPosition,
    limit: number,
  ): Promise<ExportRow[]>;
  close(): Promise<void>;
}

/** SQLite integers stop at 2^63; a range open on one side is bounded by these (PostgreSQL's bigint too). */
export const MIN_TS = -8_640_000_000_000_000;
export const MAX_TS = 8_640_000_000_000_000;
/** Prepared statements kept: a few shapes per day table; the days a dashboard reads again stay prepared. */
const STATEMENT_CACHE = 1024;
/**
 * Bytes of day columns a reader keeps (each FIND thread has its own reader): about
 * 56 bytes a row for documents of five scalar fields, so some 5 million rows.
 */
export const COLUMN_CACHE_BYTES = 320 * 1024 * 1024;

/**
 * Reads of the day partitions (`partitions.ts`) for FIND and exports, day by
 * day over the days a window spans. In each day the indexes on
 * (thing_type, ts), ts and, once the day has closed, (thing_name, ts) decide
 * what is read. Lists of thing types and names go in as one JSON array each
 * (`IN (SELECT value FROM json_each(?))`): one variable whatever their length,
 * so 40,000 names never reach SQLite's limit of 32,766 variables, and one
 * prepared statement per shape and day.
 */
export class SqliteObservationReader implements ObservationReader {
  private readonly statements = new LRUCache<string, Statement>({ max: STATEMENT_CACHE });
  private readonly days: (from: number, to: number) => number[];
  private readonly catalog: Statement<[number, number], CatalogDay>;
  /**
   * Columns of closed days, each with the token of the rows it was built from
   * (`ColumnsToken`): while they answer the day's rows up to their `maxId`, rows stored
   * late into the day after them are read from the table beside them; a day retention
   * changed is taken apart again rather than answered stale.
   */
  private readonly columns: LRUCache<number, { token: ColumnsToken; columns: DayColumns }>;

  constructor(
    private readonly db: Db,
    { columnCacheBytes = COLUMN_CACHE_BYTES }: { columnCacheBytes?: number } = {},
  ) {
    this.days = partitionDays(db);
    this.catalog = db.prepare(
      "SELECT day, indexed FROM observation_partitions WHERE day >= ? AND day <= ? ORDER BY day",
    );
    this.columns = new LRUCache({ maxSize: columnCacheBytes, sizeCalculation: (c) => Math.max(1, c.columns.bytes) });
  }

  async scan(
    f: CandidateFilter,
    visitor: CandidateVisitor,
    pick: () => readonly number[],
  ): Promise<Map<number, string>> {
    return this.db.transaction(() => {
      this.scanDays(f, visitor);
      return this.documents(pick(), f);
    })();
  }

  /** The connection is its owner's: a FIND thread's or the process's. */
  async close(): Promise<void> {}

  columnScan<T>(
    f: CandidateFilter,
    paths: ReadonlySet<string>,
    tick: () => void,
    answer: (days: ColumnDay[], documents: DocumentLoader) => T,
  ): T | undefined {
    return this.db.transaction(() => {
      const from = clamp(f.tsFrom);
      const to = clamp(f.tsTo);
      const days: ColumnDay[] = [];
      const catalog = from <= to ? this.catalog.all(dayOf(from), dayOf(to)) : [];
      // The open day has no columns: known before any day's columns are loaded.
      if (catalog.some((d) => d.indexed !== 1)) return undefined;
      for (const { day } of catalog) {
        const kept = this.columnsOf(day, { tick });
        // Late rows are not in the columns: the scan reads them beside the columns.
        if (kept === undefined || kept.late || !kept.columns.projection(paths)) return undefined;
        const { columns } = kept;
        days.push({ columns, from: columns.firstRow(from, true), end: columns.firstRow(to, false) });
      }
      return answer(days, (ids) => this.documents(ids, f));
    })();
  }

  private scanDays(f: CandidateFilter, visitor: CandidateVisitor): void {
    const names = f.thingNames;
    const lists = names ? [JSON.stringify(f.thingTypes), JSON.stringify(names)] : [JSON.stringify(f.thingTypes)];
    const from = clamp(f.tsFrom);
    const to = clamp(f.tsTo);
    if (from > to) return;
    for (const { day, indexed } of this.catalog.all(dayOf(from), dayOf(to))) {
      // Only a closed day's columns are kept: the open day takes rows all the time.
      const paths = visitor.paths;
      const kept = paths && indexed === 1 ? this.columnsOf(day, visitor) : undefined;
      const projection = kept?.columns.projection(paths!);
      if (kept && projection) {
        const { columns } = kept;
        const types = DayColumns.mask(columns.thingTypes, f.thingTypes);
        const things = names ? DayColumns.mask(columns.thingNames, names) : undefined;
        const end = columns.firstRow(to, false);
        for (let r = columns.firstRow(from, true); r < end; r++) {
          const type = columns.thingType[r]!;
          if (types[type] === 0 || (things && things[columns.thingName[r]!] === 0)) continue;
          visitor.projected(columns.id[r]!, columns.thingTypes[type]!, columns.project(projection, r));
        }
        // Rows stored after the columns were built: read beside them.
        if (kept.late) this.scanRows(day, kept.token.maxId, [from, to, ...lists], names !== undefined, visitor);
        continue;
      }
      this.scanRows(day, undefined, [from, to, ...lists], names !== undefined, visitor);
    }
  }

  /**
   * The day's rows in the window and scope to `visitor` as JSON text; with `afterId`, only those
   * past it, found by the rowid (the other conditions filter then, `+`: no index of theirs).
   */
  private scanRows(
    day: number,
    afterId: number | undefined,
    args: unknown[],
    byName: boolean,
    visitor: CandidateVisitor,
  ): void {
    const late = afterId !== undefined;
    const stmt = this.statement(`${late ? "l" : "s"}:${byName ? "names" : "types"}:${day}`, () => {
      const [range, plus] = late ? ["id > ? AND ", "+"] : ["", ""];
      const sql = `SELECT id, thing_type, ${DOCUMENT_SQL} FROM ${partitionTable(day)} WHERE ${range}${plus}ts >= ? AND ${plus}ts <= ? AND ${plus}thing_type IN ${LIST}`;
      return byName ? `${sql} AND ${plus}thing_name IN ${LIST}` : sql;
    });
    const rows = (late ? stmt.iterate(afterId, ...args) : stmt.iterate(...args)) as IterableIterator<CandidateRow>;
    for (const [id, thingType, json] of rows) visitor.row(id, thingType, json);
  }

  /**
   * The columns of a closed day: kept from an earlier scan, or as the writer stored them, or else
   * taken apart here (within the query's budget); `late` when rows came into the day after them.
   * Columns that answer the day's rows up to their `maxId` stay in use: a late device costs each
   * query its few rows, not a rebuild of the day. Newer stored columns replace the kept ones.
   */
  private columnsOf(
    day: number,
    visitor: Pick<CandidateVisitor, "tick">,
  ): { token: ColumnsToken; columns: DayColumns; late: boolean } | undefined {
    const prepare: Prepare = (sql) => this.statement(sql, () => sql);
    const now = columnsToken(prepare, day);
    if (now === undefined) return undefined;
    let kept = this.columns.get(day);
    if (kept !== undefined && !answersUpTo(kept.token, now)) kept = undefined;
    if (kept === undefined || kept.token.maxId < now.maxId) {
      const built =
        storedColumns(prepare, day, now, kept?.token.maxId) ??
        (kept === undefined ? { token: now, columns: buildColumns(prepare, day, () => visitor.tick()) } : undefined);
      if (built !== undefined) this.columns.set(day, (kept = built));
    }
    return { ...kept!, late: kept!.token.maxId < now.maxId };
  }

  /** Documents of the window by id: a page of hits whose documents the scan cut down. */
  private documents(ids: readonly number[], f: CandidateFilter): Map<number, string> {
    const out = new Map<number, string>();
    if (ids.length === 0) return out;
    const list = JSON.stringify(ids);
    for (const day of this.days(clamp(f.tsFrom), clamp(f.tsTo))) {
      const stmt = this.statement(
        `d:${day}`,
        () => `SELECT id, ${DOCUMENT_SQL} FROM ${partitionTable(day)} WHERE id IN ${LIST}`,
      );
      for (const [id, doc] of stmt.all(list) as [number, string][]) out.set(id, doc);
      if (out.size === ids.length) break;
    }
    return out;
  }

  async candidates(f: CandidateFilter, limit: number): Promise<CandidateRow[]> {
    return this.candidatesNow(f, limit);
  }

  /**
   * `candidates` in this turn, for tests that check what is stored in the turn of an
   * acknowledgement. In one read transaction: every day read from the same snapshot, none dropped
   * half-way by retention.
   */
  candidatesNow(f: CandidateFilter, limit: number): CandidateRow[] {
    return this.db.transaction(() => this.candidatesOfDays(f, limit))();
  }

  private candidatesOfDays(f: CandidateFilter, limit: number): CandidateRow[] {
    const names = f.thingNames;
    const lists = names ? [JSON.stringify(f.thingTypes), JSON.stringify(names)] : [JSON.stringify(f.thingTypes)];
    const from = clamp(f.tsFrom);
    const to = clamp(f.tsTo);
    const out: CandidateRow[] = [];
    for (const day of this.days(from, to)) {
      const stmt = this.statement(`c:${names ? "names" : "types"}:${day}`, () => {
        let sql = `SELECT id, thing_type, ${DOCUMENT_SQL} FROM ${partitionTable(day)} WHERE ts >= ? AND ts <= ? AND thing_type IN ${LIST}`;
        if (names) sql += ` AND thing_name IN ${LIST}`;
        return `${sql} LIMIT ?`;
      });
      const rows = stmt.all(from, to, ...lists, limit - out.length) as CandidateRow[];
      for (const row of rows) out.push(row);
      if (out.length >= limit) break;
    }
    return out;
  }

  async exportPage(...page: Parameters<ObservationReader["exportPage"]>): Promise<ExportRow[]> {
    return this.db.transaction(() => this.exportPageOfDays(...page))();
  }

  private exportPageOfDays(
    scope: { thingType?: string; things?: readonly string[] },
    from: number,
    to: number,
    after: ExportPosition,
    limit: number,
  ): ExportRow[] {
    const byType = scope.thingType !== undefined;
    const scopeArg = byType ? scope.thingType! : JSON.stringify(scope.things ?? []);
    // The lower bound starts at the last row read, so each page is an index range, not a rescan.
    const lower = Math.max(clamp(from), after.ts);
    const upper = clamp(to);
    const out: ExportRow[] = [];
    // Days are disjoint and ascending: their (ts, id) orders put end to end are the export's order.
    for (const day of this.days(lower, upper)) {
      const stmt = this.statement(`e:${byType ? "type" : "things"}:${day}`, () => {
        const where = byType ? "thing_type = ?" : `thing_name IN ${LIST}`;
        return `SELECT id, ts, thing_name, ${DOCUMENT_SQL} FROM ${partitionTable(day)}
         WHERE ts >= ? AND ts < ? AND (ts > ? OR id > ?) AND ${where}
         ORDER BY ts, id LIMIT ?`;
      });
      const rows = stmt.all(lower, upper, after.ts, Number(after.id), scopeArg, limit - out.length) as ExportRow[];
      for (const row of rows) out.push(row);
      if (out.length >= limit) break;
    }
    return out;
  }

  private statement(key: string, sql: () => string): Statement {
    let stmt = this.statements.get(key);
    if (!stmt) {
      stmt = this.db.prepare(sql()).raw(true);
      this.statements.set(key, stmt);
    }
    return stmt;
  }
}

interface CatalogDay {
  day: number;
  /** 1 once the day has closed (its thing index is built). */
  indexed: number;
}

/** A list bound as one JSON array parameter. */
const LIST = "(SELECT value FROM json_each(?))";

export function clamp(t: number): number {
  return Math.max(MIN_TS, Math.min(MAX_TS, t));
}
