import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type pg from "pg";
import { from as copyFrom } from "pg-copy-streams";
import { PG_COPY_NULL, pgCopyField, type Db } from "../store/index.js";
import type { Convert, SqliteValue } from "./convert.js";
import { StoreCopyError } from "./errors.js";

/** Characters of COPY text handed to the connection at a time: one chunk in memory, never a table. */
const COPY_CHUNK = 1 << 20;

export interface RowsCopy {
  /** The SQLite table read. */
  from: string;
  /** The PostgreSQL table written (a partitioned one routes each row to its partition). */
  into: string;
  /** Column names, the same on both sides, with how each value is carried over. */
  columns: Readonly<Record<string, Convert>>;
}

const quoted = (name: string): string => `"${name}"`;

/**
 * Streams every row of a SQLite table into a PostgreSQL table with one COPY, in the caller's
 * transaction: rows are read one at a time and sent in chunks of about `COPY_CHUNK` characters.
 * Answers the rows sent.
 */
export async function copyRows(source: Db, target: pg.PoolClient, copy: RowsCopy): Promise<number> {
  const names = Object.keys(copy.columns);
  const converts = Object.values(copy.columns);
  const list = names.map(quoted).join(", ");
  const rows = source
    .prepare(`SELECT ${list} FROM ${quoted(copy.from)}`)
    .raw(true)
    .safeIntegers(true)
    .iterate() as IterableIterator<SqliteValue[]>;
  let sent = 0;
  function* lines(): Generator<string> {
    let chunk = "";
    for (const row of rows) {
      for (let c = 0; c < converts.length; c++) {
        let value: string | null;
        try {
          value = converts[c]!(row[c]!);
        } catch (err) {
          throw new StoreCopyError(`${copy.from}.${names[c]}: ${(err as Error).message}`);
        }
        chunk += (c === 0 ? "" : "\t") + (value === null ? PG_COPY_NULL : pgCopyField(value));
      }
      chunk += "\n";
      sent++;
      if (chunk.length >= COPY_CHUNK) {
        yield chunk;
        chunk = "";
      }
    }
    if (chunk) yield chunk;
  }
  await pipeline(Readable.from(lines()), target.query(copyFrom(`COPY ${quoted(copy.into)} (${list}) FROM STDIN`)));
  return sent;
}
