/**
 * Observations stored per second by each backend's store path, in one run: the engine's SQLite
 * store (`openObservations` with its writer thread, on a data directory of its own) and
 * `PgObservationStore` (one COPY a batch, on a database of its own, dropped at the end). Each
 * is handed the same batches, already in columns as the engine builds them (documents of a
 * few fields, rows of 8 Kafka partitions with their offsets), one batch at a time, each
 * awaited until durable, as the engine's source commits.
 *
 * Rerun: npx tsx bench/store/index.ts (BENCH_STORE_ROWS, BENCH_STORE_BATCH to change sizes).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { migrations } from "../../src/migrations.js";
import {
  ObservationColumnsBuilder,
  PgObservationStore,
  observationPgMigrations,
  openObservations,
  type ObservationColumns,
  type ObservationStore,
} from "../../src/observations/index.js";
import { openDatabase } from "../../src/store/index.js";
import { createPgDatabase } from "../../test/support/postgres.js";
import { writeSection } from "../results.js";

const ROWS = Number(process.env.BENCH_STORE_ROWS ?? 200_000);
const BATCH = Number(process.env.BENCH_STORE_BATCH ?? 5_000);
const PARTITIONS = 8;
const THINGS = 10_000;
const TARGET_PG = 50_000;

/** The run's batches, built before any clock starts: only the store path is timed. */
function batches(): ObservationColumns[] {
  const out: ObservationColumns[] = [];
  const start = Date.now() - 3_600_000;
  for (let from = 0; from < ROWS; from += BATCH) {
    const n = Math.min(BATCH, ROWS - from);
    const rows = new ObservationColumnsBuilder(n);
    for (let k = 0; k < n; k++) {
      const i = from + k;
      const thing = i % THINGS;
      const doc = JSON.stringify({
        thingName: `thing-${thing}`,
        thingType: String(1 + (thing % 5)),
        domain: "acme",
        timestamp: start + Math.floor((i * 3_600_000) / ROWS),
        state: { temp: 20 + (i % 17) / 2, humidity: 40 + (i % 23), status: i % 11 === 0 ? "alarm" : "ok" },
      });
      const partition = thing % PARTITIONS;
      rows.addDocument(
        `thing-${thing}`,
        String(1 + (thing % 5)),
        "acme",
        start + Math.floor((i * 3_600_000) / ROWS),
        doc,
        rows.streamOf(`kafka:observations:${partition}`, undefined),
        Math.floor(i / PARTITIONS),
      );
    }
    out.push(rows.columns());
  }
  return out;
}

/** Stores every batch, one at a time, each awaited; answers observations per second. */
async function run(store: ObservationStore, work: readonly ObservationColumns[]): Promise<number> {
  const started = performance.now();
  for (const columns of work) await store.insertColumns(columns);
  const seconds = (performance.now() - started) / 1000;
  const stored = await store.count();
  if (stored !== ROWS) throw new Error(`stored ${stored} of ${ROWS} observations`);
  return ROWS / seconds;
}

async function sqlite(work: readonly ObservationColumns[]): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), "dms-bench-store-"));
  const db = openDatabase({ dataDir: dir, migrations });
  const opened = openObservations({ dataDir: dir, db, writerThread: true });
  try {
    return await run(opened.store, work);
  } finally {
    await opened.close();
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function postgres(work: readonly ObservationColumns[]): Promise<number> {
  const database = await createPgDatabase(observationPgMigrations);
  try {
    return await run(await PgObservationStore.open(database.pool), work);
  } finally {
    await database.drop();
  }
}

const work = batches();
const machine = `${cpus()[0]?.model ?? "unknown"}, ${cpus().length} cores, Node ${process.version}`;
const loadBefore = loadavg()[0]!;
const sqlitePerSecond = await sqlite(work);
const pgPerSecond = await postgres(work);
const loadAfter = loadavg()[0]!;

const body = [
  "## Observations stored per second (bench/store)",
  "",
  `${machine}; ${new Date().toISOString()}; load average ${loadBefore.toFixed(1)} before, ${loadAfter.toFixed(1)} after.`,
  `${ROWS.toLocaleString("en")} observations in batches of ${BATCH.toLocaleString("en")}, one batch at a time, each awaited until durable.`,
  "Rerun: `npx tsx bench/store/index.ts` (BENCH_STORE_ROWS, BENCH_STORE_BATCH).",
  "",
  "| store path | observations/s | target |",
  "|---|---|---|",
  `| SQLite (writer thread, observation file) | ${Math.round(sqlitePerSecond).toLocaleString("en")} | |`,
  `| PostgreSQL (PgObservationStore, COPY a batch) | ${Math.round(pgPerSecond).toLocaleString("en")} | >= ${TARGET_PG.toLocaleString("en")} |`,
].join("\n");
console.log(body);
writeSection("store", body);
