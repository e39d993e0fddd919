/**
 * Moves an installation from SQLite to PostgreSQL: copies the data directory of a stopped dms
 * into an empty PostgreSQL database (src/store-copy), then prints the rows of each table on both
 * sides. Start dms with DMS_DATABASE_URL afterwards.
 *
 *   npm run store:copy -- --from ./data --to "$DMS_DATABASE_URL"
 *
 * Exits 1, having committed nothing, when the database is not empty, a count differs or the copy fails.
 */
import { parseArgs } from "node:util";
import { CountMismatchError, copyStore, formatCounts } from "../src/store-copy/index.js";

const USAGE = "usage: npm run store:copy -- --from <data dir> --to <postgres:// URL>";

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { from: { type: "string" }, to: { type: "string" } } });
  if (!values.from || !values.to) throw new Error(USAGE);
  const report = await copyStore({ from: values.from, to: values.to, log: (line) => console.error(line) });
  process.stdout.write(`${formatCounts(report.counts)}\n`);
}

main().catch((err: unknown) => {
  if (err instanceof CountMismatchError) process.stdout.write(`${formatCounts(err.counts)}\n`);
  console.error(`store:copy: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
