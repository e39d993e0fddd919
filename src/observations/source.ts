import Database from "better-sqlite3";
import { openPgPool } from "../store/index.js";
import { PgObservationReader } from "./pg-reader.js";
import { SqliteObservationReader, type ObservationReader } from "./reader.js";

/**
 * Where a FIND thread opens a reader of its own: the observation file (read-only; in WAL mode
 * its reads never block the writer) or the database the observations are in.
 */
export type ReaderSource = { sqliteFile: string } | { postgresUrl: string };

/** Connections a FIND thread's reader holds: one scan at a time, and the page's documents on the same. */
const THREAD_POOL_SIZE = 2;

/** A reader of its own on `source`; `close` lets go of its connection. */
export function openObservationReader(
  source: ReaderSource,
  { columnCacheBytes }: { columnCacheBytes?: number } = {},
): { reader: ObservationReader; close(): Promise<void> } {
  if ("postgresUrl" in source) {
    const pool = openPgPool(source.postgresUrl, { max: THREAD_POOL_SIZE });
    return { reader: new PgObservationReader(pool), close: () => pool.end() };
  }
  const db = new Database(source.sqliteFile, { readonly: true, fileMustExist: true });
  db.pragma("busy_timeout = 5000");
  return {
    reader: new SqliteObservationReader(db, { columnCacheBytes }),
    close: async () => {
      db.close();
    },
  };
}
