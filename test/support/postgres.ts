import { randomUUID } from "node:crypto";
import pg from "pg";
import { migratePg, openPgPool, type PgMigration, type PgPool } from "../../src/store/index.js";

/** The machine's PostgreSQL 15 (trust authentication); `DMS_TEST_PG_URL` points elsewhere. */
const SERVER = process.env.DMS_TEST_PG_URL ?? "postgres://postgres@127.0.0.1:5432";

/** The connection string of database `name` on the test server, for a second pool as another process would open. */
export function pgDatabaseUrl(name: string): string {
  return `${SERVER}/${name}`;
}

export interface PgDatabase {
  pool: PgPool;
  name: string;
  /** The database's connection string, for what opens connections of its own (a second pool, a worker thread). */
  url: string;
  /** Closes the pool and drops the database. */
  drop(): Promise<void>;
}

async function admin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: `${SERVER}/postgres` });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** A database of its own for one test file (unique name, so runs in parallel never meet), migrated. */
export async function createPgDatabase(migrations: readonly PgMigration[]): Promise<PgDatabase> {
  const name = `dms_test_${randomUUID().replaceAll("-", "")}`;
  await admin((c) => c.query(`CREATE DATABASE ${name}`));
  const pool = openPgPool(pgDatabaseUrl(name));
  try {
    await migratePg(pool, migrations);
  } catch (err) {
    await pool.end();
    await admin((c) => c.query(`DROP DATABASE ${name} WITH (FORCE)`));
    throw err;
  }
  return {
    pool,
    name,
    url: `${SERVER}/${name}`,
    drop: async () => {
      await pool.end();
      await admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
    },
  };
}
