import { mkdirSync } from "node:fs";
import { join } from "node:path";
import Database, { type Statement } from "better-sqlite3";

export type Db = Database.Database;
export { Dictionary } from "./dictionary.js";
export { startCheckpointer, type Checkpointer } from "./checkpointer.js";
export { lowerThreadPriority, ThreadCalls, type OmitEach, type ThreadReply } from "./thread.js";
export { RetentionSweeper, type RetentionOptions, oldestRowsRemover, type RetentionTarget } from "./retention.js";
export {
  migratePg,
  openPgPool,
  pgDeleteOldest,
  pgTransaction,
  PG_POOL_DEFAULTS,
  TRANSACTION_ATTEMPTS,
  type PgMigration,
  type PgPool,
  type PgPoolOptions,
  type PgQueryable,
} from "./pg.js";
export { databaseFault, unavailableError, type DatabaseFaultKind } from "./faults.js";
export { int8AsNumber, pgQuery } from "./pg-types.js";
export { pgCopyField, PG_COPY_NULL } from "./pg-copy.js";

/**
 * One schema change. Each capability owns its migrations (ids prefixed by the
 * capability, e.g. `auth-001`) so that folders evolve their tables without
 * touching each other; ids are applied once, in the order given.
 */
export interface Migration {
  id: string;
  up: string | ((db: Db) => void);
}

export interface OpenOptions {
  /** Directory holding the database file; `:memory:` for a throw-away database. */
  dataDir: string;
  migrations: readonly Migration[];
  /** The file in `dataDir`: `dms.sqlite`, or a capability's own (the observations'). */
  fileName?: string;
}

/** Opens a SQLite connection of the process (the service's database by default), in WAL mode, and migrates it. */
export function openDatabase({ dataDir, migrations, fileName = "dms.sqlite" }: OpenOptions): Db {
  const file = dataDir === ":memory:" ? ":memory:" : join(ensureDir(dataDir), fileName);
  const db = new Database(file);
  writingConnection(db);
  db.pragma("foreign_keys = ON");
  migrate(db, migrations);
  return db;
}

/**
 * A writer thread's own connection to a file the process opened (and migrated) with
 * `openDatabase`: set up as the process's connection is, its WAL checkpointed as that one's is
 * (`walAutocheckpoint`: where a checkpointer thread copies the WAL back, its commits do not).
 */
export function openWriterConnection(file: string, walAutocheckpoint: number): Db {
  const db = new Database(file);
  writingConnection(db);
  db.pragma(`wal_autocheckpoint = ${walAutocheckpoint}`);
  return db;
}

/** What every connection that writes needs: WAL, its durability, a wait for the write lock, a page cache. */
function writingConnection(db: Db): void {
  db.pragma("journal_mode = WAL");
  // NORMAL is durable across process crashes in WAL mode; only an OS crash can lose the last commits.
  db.pragma("synchronous = NORMAL");
  db.pragma("busy_timeout = 5000");
  // 64 MiB of page cache instead of 2: the observation store's three indexes take inserts all over
  // their B-trees, and at stream rates the default cache makes every insert re-read index pages.
  db.pragma("cache_size = -65536");
}

export function migrate(db: Db, migrations: readonly Migration[]): string[] {
  db.exec("CREATE TABLE IF NOT EXISTS schema_migrations (id TEXT PRIMARY KEY, applied_at TEXT NOT NULL)");
  const applied = new Set(
    db
      .prepare<[], { id: string }>("SELECT id FROM schema_migrations")
      .all()
      .map((r) => r.id),
  );
  const record = db.prepare("INSERT INTO schema_migrations (id, applied_at) VALUES (?, ?)");
  const done: string[] = [];
  for (const m of migrations) {
    if (applied.has(m.id)) continue;
    db.transaction(() => {
      if (typeof m.up === "string") db.exec(m.up);
      else m.up(db);
      record.run(m.id, new Date().toISOString());
    })();
    done.push(m.id);
  }
  return done;
}

export function ensureDir(dir: string): string {
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** ISO 8601 with milliseconds, UTC: the timestamp format of the interface. */
export function isoNow(now: number = Date.now()): string {
  return new Date(now).toISOString();
}

/** Prepares each SQL text once on `db` and hands the statement out again: stores that run a few per request or message. */
export function statementCache(
  db: Db,
): <P extends unknown[] | object = unknown[], R = unknown>(sql: string) => Statement<P, R> {
  const statements = new Map<string, unknown>();
  return <P extends unknown[] | object = unknown[], R = unknown>(sql: string): Statement<P, R> => {
    let statement = statements.get(sql) as Statement<P, R> | undefined;
    if (!statement) {
      statement = db.prepare<P, R>(sql);
      statements.set(sql, statement);
    }
    return statement;
  };
}
