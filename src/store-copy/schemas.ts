import type { Db, PgMigration, PgPool } from "../store/index.js";
import { StoreCopyError } from "./errors.js";
import { DAY_TABLE } from "./observations.js";
import { OBSERVATION_FILE_TABLES, PG_OTHER_TABLES, SQLITE_NOT_COPIED, TABLES } from "./tables.js";

const CREATE_TABLE = /CREATE TABLE (?:IF NOT EXISTS )?(\w+)/g;

/** The tables `migrations` make: dms's own, whatever else the database holds. */
export function tablesOf(migrations: readonly PgMigration[]): string[] {
  return migrations.flatMap((m) => [...m.up.matchAll(CREATE_TABLE)].map((match) => match[1]!));
}

/**
 * Refuses a database that holds any row of dms's tables (but the root domain the migrations
 * write), before migrating it: a copy goes into an empty database only, never over another
 * installation's data.
 */
export async function refuseNonEmpty(pool: PgPool, migrations: readonly PgMigration[]): Promise<void> {
  for (const table of tablesOf(migrations)) {
    const { rows } = await pool.query<{ exists: string | null }>("SELECT to_regclass($1)::text AS exists", [table]);
    if (rows[0]!.exists === null) continue;
    const filter = table === "domains" ? " WHERE id <> 'root'" : "";
    const { rowCount } = await pool.query(`SELECT 1 FROM "${table}"${filter} LIMIT 1`);
    if ((rowCount ?? 0) > 0) {
      throw new StoreCopyError(
        `the target database is not empty (table ${table} has rows): store:copy copies into an empty database only`,
      );
    }
  }
}

function sqliteTables(db: Db): string[] {
  return db
    .prepare<[], { name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
    .all()
    .map((r) => r.name);
}

function sqliteColumns(db: Db, table: string): Set<string> {
  return new Set(
    db
      .prepare<[string], { name: string }>("SELECT name FROM pragma_table_info(?)")
      .all(table)
      .map((r) => r.name),
  );
}

/**
 * Checks that the copy covers both schemas as migrated now: every table of either side is copied
 * or named as not copied, and every column of a copied PostgreSQL table has its conversion and a
 * SQLite column to come from. A table or column added by a later migration stops the copy here,
 * naming it, rather than being left behind.
 */
export async function checkCoverage(
  service: Db,
  observations: Db,
  pool: PgPool,
  migrations: readonly PgMigration[],
): Promise<void> {
  const copied = new Set(TABLES.map((t) => t.table));
  if (sqliteColumns(service, "observations").size > 0) {
    throw new StoreCopyError(
      "dms.sqlite still holds the single observations table of an earlier version: start dms once on this data directory (it moves them into observations.sqlite), stop it, then copy",
    );
  }
  for (const table of sqliteTables(service)) {
    if (!copied.has(table) && !(table in SQLITE_NOT_COPIED)) {
      throw new StoreCopyError(`dms.sqlite has a table store:copy does not know: ${table}`);
    }
  }
  for (const table of sqliteTables(observations)) {
    if (!DAY_TABLE.test(table) && !(table in OBSERVATION_FILE_TABLES)) {
      throw new StoreCopyError(`observations.sqlite has a table store:copy does not know: ${table}`);
    }
  }
  for (const table of tablesOf(migrations)) {
    if (!copied.has(table) && !(table in PG_OTHER_TABLES)) {
      throw new StoreCopyError(`the PostgreSQL migrations make a table store:copy does not know: ${table}`);
    }
  }
  const { rows } = await pool.query<{ table: string; columns: string[] }>(
    `SELECT c.relname AS table, array_agg(a.attname::text) AS columns
     FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
     WHERE c.relnamespace = current_schema()::regnamespace AND c.relname = ANY($1::text[])
     GROUP BY c.relname`,
    [[...copied]],
  );
  const pgTables = new Map(rows.map((r) => [r.table, new Set(r.columns)]));
  for (const { table, columns } of TABLES) {
    const target = pgTables.get(table);
    if (target === undefined) throw new StoreCopyError(`the PostgreSQL schema has no table ${table}`);
    const source = sqliteColumns(service, table);
    for (const column of target) {
      if (!(column in columns)) throw new StoreCopyError(`store:copy does not know column ${table}.${column}`);
    }
    for (const column of Object.keys(columns)) {
      if (!target.has(column)) throw new StoreCopyError(`the PostgreSQL table ${table} has no column ${column}`);
      if (!source.has(column)) throw new StoreCopyError(`the dms.sqlite table ${table} has no column ${column}`);
    }
  }
}
