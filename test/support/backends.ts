import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  openDatabase,
  openPgPool,
  type Db,
  type Migration,
  type PgMigration,
  type PgPool,
} from "../../src/store/index.js";
import { createPgDatabase, type PgDatabase } from "./postgres.js";

/** One database behind a store seam, for a contract suite that runs the same cases on each. */
export interface Backend<S> {
  name: "SQLite" | "PostgreSQL";
  /** A store over an empty database of its own. */
  open(): Promise<S>;
  /**
   * Two processes' stores over one empty database of its own: two connections to one SQLite
   * file, or two pools on one PostgreSQL database.
   */
  openPair(): Promise<[S, S]>;
  /** Closes (and drops) every database `open` and `openPair` made. */
  close(): Promise<void>;
}

/** The SQLite and PostgreSQL backends of one seam: each makes its tables and its store. */
export function storeBackends<S>(seam: {
  sqlite: { migrations: readonly Migration[]; store(db: Db): S };
  pg: { migrations: readonly PgMigration[]; store(pool: PgPool): S };
}): [Backend<S>, Backend<S>] {
  const dbs: Db[] = [];
  const dirs: string[] = [];
  const databases: PgDatabase[] = [];
  const pools: PgPool[] = [];
  const sqlite = (dataDir: string): S => {
    const db = openDatabase({ dataDir, migrations: seam.sqlite.migrations });
    dbs.push(db);
    return seam.sqlite.store(db);
  };
  const pg = async (): Promise<PgDatabase> => {
    const database = await createPgDatabase(seam.pg.migrations);
    databases.push(database);
    return database;
  };
  return [
    {
      name: "SQLite",
      open: async () => sqlite(":memory:"),
      async openPair() {
        const dir = mkdtempSync(join(tmpdir(), "dms-store-"));
        dirs.push(dir);
        return [sqlite(dir), sqlite(dir)];
      },
      async close() {
        for (const db of dbs.splice(0)) db.close();
        for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
      },
    },
    {
      name: "PostgreSQL",
      open: async () => seam.pg.store((await pg()).pool),
      async openPair() {
        const database = await pg();
        const second = openPgPool(database.url);
        pools.push(second);
        return [seam.pg.store(database.pool), seam.pg.store(second)];
      },
      async close() {
        await Promise.all(pools.splice(0).map((p) => p.end()));
        await Promise.all(databases.splice(0).map((d) => d.drop()));
      },
    },
  ];
}
