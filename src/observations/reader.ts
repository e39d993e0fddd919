import { LRUCache } from "lru-cache";
import type { Db } from "../store/index.js";
import type { Statement } from "better-sqlite3";
import { partitionDays, partitionTable } from "./partitions.js";

/** A stored row as FIND reads it: id, thing type, document JSON. */
export type CandidateRow = [id: number, thingType: string, doc: string];

/** A row of an export page: id, timestamp, thing name, document JSON. */
export type ExportRow = [id: number, ts: number, thingName: string, doc: string];

export interface CandidateFilter {
  tsFrom: number;
  tsTo: number;
  /** Never empty: the caller answers an empty scope without asking the store. */
  thingTypes: readonly string[];
  thingNames?: readonly string[];
}

/** What FIND and exports read of the observation store; synchronous, so a FIND thread reads in its time budget. */
export interface ObservationReader {
  /** Rows in the window and scope, at most `limit` (unordered). */
  candidates(f: CandidateFilter, limit: number): CandidateRow[];
  /** One page of an export in (ts, id) order after the given position, so a long export reads in short statements. */
  exportPage(
    scope: { thingType?: string; things?: readonly string[] },
    from: number,
    to: number,
    after: { ts: number; id: number },
    limit: number,
  ): ExportRow[];
}

/** SQLite integers stop at 2^63; a range open on one side is bounded by these. */
const MIN_TS = -8_640_000_000_000_000;
const MAX_TS = 8_640_000_000_000_000;
/** Prepared statements kept: four shapes per day table; the days a dashboard reads again stay prepared. */
const STATEMENT_CACHE = 1024;

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

  constructor(private readonly db: Db) {
    this.days = partitionDays(db);
  }

  /** In one read transaction: every day read from the same snapshot, none dropped half-way by retention. */
  candidates(f: CandidateFilter, limit: number): CandidateRow[] {
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
        let sql = `SELECT id, thing_type, doc FROM ${partitionTable(day)} WHERE ts >= ? AND ts <= ? AND thing_type IN ${LIST}`;
        if (names) sql += ` AND thing_name IN ${LIST}`;
        return `${sql} LIMIT ?`;
      });
      const rows = stmt.all(from, to, ...lists, limit - out.length) as CandidateRow[];
      for (const row of rows) out.push(row);
      if (out.length >= limit) break;
    }
    return out;
  }

  exportPage(...page: Parameters<ObservationReader["exportPage"]>): ExportRow[] {
    return this.db.transaction(() => this.exportPageOfDays(...page))();
  }

  private exportPageOfDays(
    scope: { thingType?: string; things?: readonly string[] },
    from: number,
    to: number,
    after: { ts: number; id: number },
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
        return `SELECT id, ts, thing_name, doc FROM ${partitionTable(day)}
         WHERE ts >= ? AND ts < ? AND (ts > ? OR id > ?) AND ${where}
         ORDER BY ts, id LIMIT ?`;
      });
      const rows = stmt.all(lower, upper, after.ts, after.id, scopeArg, limit - out.length) as ExportRow[];
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

/** A list bound as one JSON array parameter. */
const LIST = "(SELECT value FROM json_each(?))";

function clamp(t: number): number {
  return Math.max(MIN_TS, Math.min(MAX_TS, t));
}
