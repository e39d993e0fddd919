import pg from "pg";
import { RETRYABLE_STATES } from "./faults.js";

export type PgPool = pg.Pool;
/** A client inside a transaction (`pgTransaction`), or the pool itself for single statements. */
export type PgQueryable = Pick<pg.Pool | pg.PoolClient, "query">;

/**
 * One PostgreSQL schema change of a capability, the counterpart of `Migration`
 * for the PostgreSQL implementations of the store seams. Ids are applied once,
 * in the order given.
 */
export interface PgMigration {
  id: string;
  up: string;
}

/** How a pool waits for and bounds its connections (the `DMS_DATABASE_*` settings). */
export interface PgPoolOptions {
  /** Connections at most. */
  max?: number;
  /**
   * Longest wait for a connection, whether the pool has none free or the server does not answer
   * the connect: then the query fails as `unreachable` (`databaseFault`) instead of waiting on.
   */
  connectTimeoutMs?: number;
  /** Longest a statement runs before the server cancels it (`statement_timeout`); 0: no limit. */
  statementTimeoutMs?: number;
}

/** Pool defaults for what opens a pool without settings of its own (tools, tests). */
export const PG_POOL_DEFAULTS: Required<PgPoolOptions> = { max: 10, connectTimeoutMs: 5000, statementTimeoutMs: 0 };

/** A pool to `url` (a `postgres://` connection string). */
export function openPgPool(url: string, options: PgPoolOptions = {}): PgPool {
  const max = options.max ?? PG_POOL_DEFAULTS.max;
  const connectTimeoutMs = options.connectTimeoutMs ?? PG_POOL_DEFAULTS.connectTimeoutMs;
  const statementTimeoutMs = options.statementTimeoutMs ?? PG_POOL_DEFAULTS.statementTimeoutMs;
  const pool = new pg.Pool({
    connectionString: url,
    max,
    keepAlive: true,
    connectionTimeoutMillis: connectTimeoutMs,
    ...(statementTimeoutMs > 0 && { statement_timeout: statementTimeoutMs }),
  });
  // An idle connection the server ended (a restart, pg_terminate_backend) is dropped and replaced by
  // the pool; unhandled, its error would end the process. A lasting fault fails the next query.
  pool.on("error", () => undefined);
  // A connection lost while checked out (in a transaction, a cursor) fails its queries, which their
  // callers see; without a listener the client's own error event would end the process as well.
  pool.on("connect", (client) => client.on("error", () => undefined));
  return pool;
}

/** Runs of a transaction that failed on a serialization failure or deadlock, the first included. */
export const TRANSACTION_ATTEMPTS = 4;

/**
 * Runs `work` in one transaction on one connection: committed when it resolves,
 * rolled back when it throws (the error is passed on). A serialization failure or
 * a deadlock (`RETRYABLE_STATES`) rolls it back and runs `work` again after a short
 * random wait, up to `TRANSACTION_ATTEMPTS` runs in all: `work` may run more than once,
 * so what it does beside `tx` must bear repeating.
 */
export async function pgTransaction<T>(pool: PgPool, work: (tx: pg.PoolClient) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await transactionOnce(pool, work);
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      if (attempt >= TRANSACTION_ATTEMPTS || typeof code !== "string" || !RETRYABLE_STATES.has(code)) throw err;
      // Apart, the transactions that met each other do not meet again at once.
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 20 * 2 ** attempt));
    }
  }
}

async function transactionOnce<T>(pool: PgPool, work: (tx: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query("BEGIN");
    const result = await work(client);
    await client.query("COMMIT");
    return result;
  } catch (err) {
    await client.query("ROLLBACK").catch((e: unknown) => {
      // A connection that cannot roll back is not handed out again.
      broken = e instanceof Error ? e : new Error(String(e));
    });
    throw err;
  } finally {
    client.release(broken);
  }
}

/** Arbitrary key of the advisory lock that keeps processes starting together from migrating twice. */
const MIGRATION_LOCK = 0x646d73;

/** Applies the migrations not applied yet, in one transaction (PostgreSQL DDL is transactional); returns their ids. */
export async function migratePg(pool: PgPool, migrations: readonly PgMigration[]): Promise<string[]> {
  return pgTransaction(pool, async (tx) => {
    // A schema change on a large table, or the wait for another process's, may take longer than a request's statement.
    await tx.query("SET LOCAL statement_timeout = 0");
    // Several processes of a cluster start at once: one migrates, the others wait and find it done.
    await tx.query("SELECT pg_advisory_xact_lock($1)", [MIGRATION_LOCK]);
    await tx.query(
      "CREATE TABLE IF NOT EXISTS schema_migrations (id TEXT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())",
    );
    const { rows } = await tx.query<{ id: string }>("SELECT id FROM schema_migrations");
    const applied = new Set(rows.map((r) => r.id));
    const done: string[] = [];
    for (const m of migrations) {
      if (applied.has(m.id)) continue;
      await tx.query(m.up);
      await tx.query("INSERT INTO schema_migrations (id) VALUES ($1)", [m.id]);
      done.push(m.id);
    }
    return done;
  });
}

/**
 * Deletes up to `limit` rows of `table` whose `timeColumn` (TIMESTAMPTZ) is before `cutoff` (epoch
 * ms), oldest first, by their `id`; answers how many. Retention sweeps in bounded steps so that no
 * one statement holds locks for long. Names are the stores' own constants, never input.
 */
export async function pgDeleteOldest(
  pool: PgQueryable,
  table: string,
  timeColumn: string,
  cutoff: number,
  limit: number,
): Promise<number> {
  const { rowCount } = await pool.query(
    `DELETE FROM ${table} WHERE id IN (
       SELECT id FROM ${table} WHERE ${timeColumn} < to_timestamp($1::double precision / 1000)
       ORDER BY ${timeColumn} LIMIT $2)`,
    [cutoff, limit],
  );
  return rowCount ?? 0;
}
