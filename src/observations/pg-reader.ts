import Cursor from "pg-cursor";
import type { PoolClient } from "pg";
import type { PgPool } from "../store/index.js";
import type {
  CandidateFilter,
  CandidateRow,
  CandidateVisitor,
  ExportPosition,
  ExportRow,
  ObservationReader,
} from "./reader.js";
import { clamp } from "./reader.js";
import { DOCUMENT_SQL } from "./rows.js";

/** Rows a cursor fetches at a time: a round trip per thousand rows, a few hundred KB held. */
const CURSOR_ROWS = 1000;
/** SQLSTATE of a statement cancelled by `statement_timeout`. */
const QUERY_CANCELED = "57014";

/** Ids and timestamps are bigint: read as numbers (exact below 2^53, as every id and millisecond time is). */
const ROW_SQL = `id::float8, thing_type, ${DOCUMENT_SQL}`;

/**
 * FIND's and exports' reads of `PgObservationStore`'s table. The filters of a `CandidateFilter`
 * (the window, the thing types, the thing names) go into the SQL, the partitions and indexes of
 * the days in the window answer them; every other clause is the query's. A scan streams its rows
 * through a cursor in one read-only REPEATABLE READ transaction (the page's documents come from
 * the same snapshot), each statement bounded by what is left of the query's time budget.
 */
export class PgObservationReader implements ObservationReader {
  constructor(private readonly pool: PgPool) {}

  async scan(
    f: CandidateFilter,
    visitor: CandidateVisitor,
    pick: () => readonly number[],
  ): Promise<Map<number, string>> {
    return this.snapshot(visitor, async (client) => {
      const [where, params] = candidateWhere(f);
      const cursor = client.query(
        new Cursor<CandidateRow>(`SELECT ${ROW_SQL} FROM observations WHERE ${where}`, params, { rowMode: "array" }),
      );
      try {
        for (;;) {
          const rows = await cursor.read(CURSOR_ROWS);
          if (rows.length === 0) break;
          for (const [id, thingType, json] of rows) visitor.row(id, thingType, json);
        }
      } finally {
        // A cursor left open keeps the connection's queue: closed before the transaction ends.
        await cursor.close();
      }
      return documents(client, pick(), f);
    });
  }

  async candidates(f: CandidateFilter, limit: number): Promise<CandidateRow[]> {
    const [where, params] = candidateWhere(f);
    const { rows } = await this.pool.query<CandidateRow>({
      text: `SELECT ${ROW_SQL} FROM observations WHERE ${where} LIMIT $${params.length + 1}`,
      values: [...params, limit],
      rowMode: "array",
    });
    return rows;
  }

  async exportPage(
    scope: { thingType?: string; things?: readonly string[] },
    from: number,
    to: number,
    after: ExportPosition,
    limit: number,
  ): Promise<ExportRow[]> {
    const byType = scope.thingType !== undefined;
    const { rows } = await this.pool.query<ExportRow>({
      // The lower bound starts at the last row read, so each page is an index range, not a rescan.
      text: `SELECT id::float8, ts::float8, thing_name, ${DOCUMENT_SQL} FROM observations
             WHERE ts >= $1 AND ts < $2 AND (ts, id) > ($3, $4)
               AND ${byType ? "thing_type = $5" : "thing_name = ANY($5::text[])"}
             ORDER BY ts, id LIMIT $6`,
      values: [
        Math.max(clamp(from), clamp(after.ts)),
        clamp(to),
        clamp(after.ts),
        Number(after.id),
        byType ? scope.thingType : [...(scope.things ?? [])],
        limit,
      ],
      rowMode: "array",
    });
    return rows;
  }

  /** The pool is the caller's. */
  async close(): Promise<void> {}

  /**
   * Runs `read` in a read-only REPEATABLE READ transaction on a connection of its own, each
   * statement cut at what is left of the budget; a statement cut so answers the budget's error.
   */
  private async snapshot<T>(visitor: CandidateVisitor, read: (client: PoolClient) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    let broken: Error | undefined;
    try {
      await client.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
      const left = visitor.remainingMs();
      if (Number.isFinite(left)) await client.query(`SET LOCAL statement_timeout = ${Math.max(1, Math.ceil(left))}`);
      const result = await read(client);
      await client.query("COMMIT");
      return result;
    } catch (err) {
      await client.query("ROLLBACK").catch((e: unknown) => {
        broken = e instanceof Error ? e : new Error(String(e));
      });
      if ((err as { code?: string }).code === QUERY_CANCELED) visitor.tick();
      throw err;
    } finally {
      client.release(broken);
    }
  }
}

/** The window and scope as SQL over the partitioned table, and its parameters. */
function candidateWhere(f: CandidateFilter): [string, unknown[]] {
  const params: unknown[] = [clamp(f.tsFrom), clamp(f.tsTo), [...f.thingTypes]];
  let where = "ts >= $1 AND ts <= $2 AND thing_type = ANY($3::text[])";
  if (f.thingNames !== undefined) {
    params.push([...f.thingNames]);
    where += " AND thing_name = ANY($4::text[])";
  }
  return [where, params];
}

/** The whole documents of `ids` in the window, by id. */
async function documents(client: PoolClient, ids: readonly number[], f: CandidateFilter): Promise<Map<number, string>> {
  const out = new Map<number, string>();
  if (ids.length === 0) return out;
  const { rows } = await client.query<[number, string]>({
    text: `SELECT id::float8, ${DOCUMENT_SQL} FROM observations WHERE id = ANY($1::bigint[]) AND ts >= $2 AND ts <= $3`,
    values: [ids, clamp(f.tsFrom), clamp(f.tsTo)],
    rowMode: "array",
  });
  for (const [id, doc] of rows) out.set(id, doc);
  return out;
}
