import { existsSync } from "node:fs";
import { join } from "node:path";
import type pg from "pg";
import { KEY_NAMES } from "../keys/index.js";
import type { Db } from "../store/index.js";
import { observationDays } from "./observations.js";
import { partitionTable } from "../observations/index.js";
import { TABLES } from "./tables.js";

/** What one table holds on each side once copied. */
export interface TableCount {
  table: string;
  sqlite: number;
  postgres: number;
}

export interface CountSources {
  dataDir: string;
  service: Db;
  observations: Db;
}

const sqliteCount = (db: Db, sql: string): number => Number(db.prepare<[], { n: number }>(sql).get()!.n);

async function pgCount(target: pg.PoolClient, sql: string): Promise<number> {
  const { rows } = await target.query<{ n: string }>(sql);
  return Number(rows[0]!.n);
}

/**
 * Counts each table on both sides, in the copy's snapshot of SQLite and its transaction on
 * PostgreSQL: rows, the observations of every day table, file contents in bytes, and keys.
 */
export async function countBoth(from: CountSources, target: pg.PoolClient): Promise<TableCount[]> {
  const counts: TableCount[] = [];
  for (const { table } of TABLES) {
    counts.push({
      table,
      sqlite: sqliteCount(from.service, `SELECT count(*) AS n FROM "${table}"`),
      postgres: await pgCount(target, `SELECT count(*) AS n FROM "${table}"`),
    });
  }
  counts.push({
    table: "file_chunks (bytes)",
    sqlite: sqliteCount(from.service, "SELECT coalesce(sum(size), 0) AS n FROM file_versions"),
    postgres: await pgCount(target, "SELECT coalesce(sum(octet_length(data)), 0) AS n FROM file_chunks"),
  });
  let observations = 0;
  for (const day of observationDays(from.observations)) {
    observations += sqliteCount(from.observations, `SELECT count(*) AS n FROM ${partitionTable(day)}`);
  }
  counts.push({
    table: "observations",
    sqlite: observations,
    postgres: await pgCount(target, "SELECT count(*) AS n FROM observations"),
  });
  counts.push({
    table: "observation_marks",
    sqlite: sqliteCount(from.observations, "SELECT count(*) AS n FROM observation_marks"),
    postgres: await pgCount(target, "SELECT count(*) AS n FROM observation_marks"),
  });
  counts.push({
    table: "service_keys",
    sqlite: KEY_NAMES.filter((name) => existsSync(join(from.dataDir, name))).length,
    postgres: await pgCount(target, "SELECT count(*) AS n FROM service_keys"),
  });
  return counts;
}

/** The counts as a table for a terminal, a mismatch marked on its line. */
export function formatCounts(counts: readonly TableCount[]): string {
  const width = counts.reduce((w, c) => Math.max(w, c.table.length), 5);
  const row = (table: string, sqlite: string, postgres: string, mark = ""): string =>
    `${table.padEnd(width)}  ${sqlite.padStart(10)}  ${postgres.padStart(10)}${mark}`;
  return [
    row("table", "sqlite", "postgres"),
    ...counts.map((c) =>
      row(c.table, String(c.sqlite), String(c.postgres), c.sqlite === c.postgres ? "" : "  MISMATCH"),
    ),
  ].join("\n");
}
