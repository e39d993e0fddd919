import { existsSync } from "node:fs";
import { join } from "node:path";
import type pg from "pg";
import { OBSERVATIONS_FILE, observationMigrations } from "../observations/index.js";
import { migrations } from "../migrations.js";
import { migratePg, openDatabase, openPgPool, pgTransaction, type Db } from "../store/index.js";
import { pgMigrations } from "../stores.js";
import { countBoth, type TableCount } from "./counts.js";
import { StoreCopyError } from "./errors.js";
import { copyFileContents } from "./file-contents.js";
import { copyKeys } from "./keys.js";
import { copyObservations } from "./observations.js";
import { copyRows } from "./rows.js";
import { checkCoverage, refuseNonEmpty } from "./schemas.js";
import { TABLES } from "./tables.js";

export interface StoreCopyOptions {
  /** The SQLite data directory to copy, its service stopped. */
  from: string;
  /** The PostgreSQL database (`postgres://` URL) to copy into: empty. */
  to: string;
  /** Where progress lines go. */
  log?: (line: string) => void;
}

/** The counts per table when every one matched. */
export interface StoreCopyReport {
  counts: TableCount[];
}

/** The counts of a copy that did not match: nothing of it was committed. */
export class CountMismatchError extends StoreCopyError {
  constructor(readonly counts: TableCount[]) {
    super(
      `the counts differ for ${counts
        .filter((c) => c.sqlite !== c.postgres)
        .map((c) => c.table)
        .join(", ")}`,
    );
  }
}

/**
 * Copies a dms installation from its SQLite data directory into an empty PostgreSQL database:
 * the database is migrated as `openPgStores` migrates it, every table, the file contents,
 * the observations and the keys are copied in one transaction, the sequences moved past the
 * copied ids, and the counts per table compared before it commits. A database with any dms row
 * in it is refused before anything is written; a count that differs rolls everything back.
 */
export async function copyStore(options: StoreCopyOptions): Promise<StoreCopyReport> {
  const log = options.log ?? (() => undefined);
  const dataDir = options.from;
  if (!existsSync(join(dataDir, "dms.sqlite"))) {
    throw new StoreCopyError(`${dataDir} holds no dms.sqlite: not the data directory of a dms on SQLite`);
  }
  // Opened as the service opens them: migrated to this version's tables first.
  const service = openDatabase({ dataDir, migrations });
  const observations = openDatabase({ dataDir, migrations: observationMigrations, fileName: OBSERVATIONS_FILE });
  // One connection for the one transaction, with no statement limit: a large table copies in one COPY.
  const pool = openPgPool(options.to, { max: 1, statementTimeoutMs: 0 });
  try {
    await refuseNonEmpty(pool, pgMigrations);
    await migratePg(pool, pgMigrations);
    await checkCoverage(service, observations, pool, pgMigrations);
    return await pgTransaction(pool, (target) =>
      inSnapshot([service, observations], () => copyAll({ dataDir, service, observations }, target, log)),
    );
  } finally {
    await pool.end();
    observations.close();
    service.close();
  }
}

/** Runs `work` inside one read transaction on each database: the copy and its counts see one state. */
async function inSnapshot<T>(dbs: readonly Db[], work: () => Promise<T>): Promise<T> {
  for (const db of dbs) {
    db.exec("BEGIN");
    // A read transaction takes its snapshot at its first read.
    db.prepare("SELECT count(*) FROM sqlite_master").get();
  }
  try {
    return await work();
  } finally {
    for (const db of dbs) db.exec("ROLLBACK");
  }
}

interface Source {
  dataDir: string;
  service: Db;
  observations: Db;
}

async function copyAll(source: Source, target: pg.PoolClient, log: (line: string) => void): Promise<StoreCopyReport> {
  // The root domain the migrations wrote; the source's own comes with its table.
  await target.query("DELETE FROM domains WHERE id = 'root'");
  for (const { table, columns } of TABLES) {
    const rows = await copyRows(source.service, target, { from: table, into: table, columns });
    log(`${table}: ${rows} rows`);
  }
  await copyFileContents(source.service, join(source.dataDir, "files"), target, log);
  await copyObservations(source.observations, target, log);
  await copyKeys(source.dataDir, target);
  log("service_keys: copied");
  await moveSequences(source.service, target);
  const counts = await countBoth(source, target);
  if (counts.some((c) => c.sqlite !== c.postgres)) throw new CountMismatchError(counts);
  return { counts };
}

/** Moves each sequence past what the copy holds, so that the next row PostgreSQL numbers takes a new number. */
async function moveSequences(service: Db, target: pg.PoolClient): Promise<void> {
  for (const { table, identity } of TABLES) {
    if (identity === undefined) continue;
    await target.query(
      `SELECT setval(pg_get_serial_sequence($1, $2), m) FROM (SELECT max("${identity}") AS m FROM "${table}") t
       WHERE m IS NOT NULL`,
      [table, identity],
    );
  }
  // The last generated rule number handed out: the next rule id continues from it.
  const { value } = service.prepare<[], { value: number }>("SELECT value FROM rule_id_sequence").get()!;
  if (value > 0) await target.query("SELECT setval('rule_id_sequence', $1)", [value]);
}
