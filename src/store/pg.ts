import pg from "pg";

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

/** A pool to `url` (a `postgres://` connection string). */
export function openPgPool(url: string, max = 10): PgPool {
  const pool = new pg.Pool({ connectionString: url, max, keepAlive: true });
  // An idle connection the server ended (a restart, pg_terminate_backend) is dropped and replaced by
  // the pool; unhandled, its error would end the process. A lasting fault fails the next query.
  pool.on("error", () => undefined);
  return pool;
}

/**
 * Runs `work` in one transaction on one connection: committed when it resolves,
 * rolled back when it throws (the error is passed on).
 */
export async function pgTransaction<T>(pool: PgPool, work: (tx: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    const result = await work(client);
    await client.query("COMMIT");
    return result;
  } catch (err) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

/** Arbitrary key of the advisory lock that keeps processes starting together from migrating twice. */
const MIGRATION_LOCK = 0x646d73;

/** Applies the migrations not applied yet, in one transaction (PostgreSQL DDL is transactional); returns their ids. */
export async function migratePg(pool: PgPool, migrations: readonly PgMigration[]): Promise<string[]> {
  return pgTransaction(pool, async (tx) => {
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
