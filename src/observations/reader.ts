import { LRUCache } from "lru-cache";
import type { Db } from "../store/index.js";
import type { Statement } from "better-sqlite3";

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

/** SQLite integers stop at 2^63; a range open on one side is bounded by these. */
const MIN_TS = -8_640_000_000_000_000;
const MAX_TS = 8_640_000_000_000_000;
/** Prepared statements kept: there are four shapes (lists are bound as one parameter), so all stay. */
const STATEMENT_CACHE = 256;

/**
 * Reads of the observation table for FIND and exports. The indexes on
 * (thing_type, ts), (thing_name, ts) and ts decide what is read. Lists of
 * thing types and names go in as one JSON array each (`IN (SELECT value FROM
 * json_each(?))`): one variable whatever their length, so 40,000 names never
 * reach SQLite's limit of 32,766 variables, and one prepared statement per shape.
 */
export class ObservationReader {
  /** Keyed by the statement's shape: bounded by construction, and by the LRU besides. */
  private readonly statements = new LRUCache<string, Statement>({ max: STATEMENT_CACHE });

  constructor(private readonly db: Db) {}

  /**
   * All candidate rows at once, as arrays: far cheaper per row in
   * better-sqlite3 than iterating objects, and FIND holds its matches anyway.
   */
  candidates(f: CandidateFilter, limit: number): CandidateRow[] {
    const names = f.thingNames;
    const key = names ? "c:names" : "c:types";
    let stmt = this.statements.get(key);
    if (!stmt) {
      let sql = `SELECT id, thing_type, doc FROM observations WHERE ts >= ? AND ts <= ? AND thing_type IN ${LIST}`;
      if (names) sql += ` AND thing_name IN ${LIST}`;
      stmt = this.db.prepare(`${sql} LIMIT ?`).raw(true);
      this.statements.set(key, stmt);
    }
    const lists = names ? [JSON.stringify(f.thingTypes), JSON.stringify(names)] : [JSON.stringify(f.thingTypes)];
    return stmt.all(clamp(f.tsFrom), clamp(f.tsTo), ...lists, limit) as CandidateRow[];
  }

  /**
   * One page of an export, in (ts, id) order after the given position, so a
   * long export reads in short statements and can stop between pages.
   */
  exportPage(
    scope: { thingType?: string; things?: readonly string[] },
    from: number,
    to: number,
    after: { ts: number; id: number },
    limit: number,
  ): ExportRow[] {
    const byType = scope.thingType !== undefined;
    const key = byType ? "e:type" : "e:things";
    let stmt = this.statements.get(key);
    if (!stmt) {
      const where = byType ? "thing_type = ?" : `thing_name IN ${LIST}`;
      stmt = this.db
        .prepare(
          `SELECT id, ts, thing_name, doc FROM observations
         WHERE ts >= ? AND ts < ? AND (ts > ? OR id > ?) AND ${where}
         ORDER BY ts, id LIMIT ?`,
        )
        .raw(true);
      this.statements.set(key, stmt);
    }
    const scopeArg = byType ? scope.thingType! : JSON.stringify(scope.things ?? []);
    // The lower bound starts at the last row read, so each page is an index range, not a rescan.
    const lower = Math.max(clamp(from), after.ts);
    return stmt.all(lower, clamp(to), after.ts, after.id, scopeArg, limit) as ExportRow[];
  }
}

/** A list bound as one JSON array parameter. */
const LIST = "(SELECT value FROM json_each(?))";

function clamp(t: number): number {
  return Math.max(MIN_TS, Math.min(MAX_TS, t));
}
