/**
 * Where FIND's time goes on wide ranges: bench/find's observations (N, default
 * 1,000,000, over 30 days) in a store of this process, the closed days' columns
 * built as the writer builds them, then bench/find's dashboard queries timed
 * from the rows (the store's reader made to hand out whole rows, as FIND read
 * before the column cache), from the columns as one cut-down document per row
 * (the reader without `columnScan`), and from the columns without a document per
 * row (find/vector), alternated, medians; with PROFILE=<file>, a CPU profile of
 * the last and its self time per function.
 * Rerun: npx tsx bench/find/profile.ts (BENCH_FIND_ROWS=300000 to scale down).
 * For function names with lines, compile with tsc first and run the output with node.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { migrations } from "../../src/migrations.js";
import { openObservations, planFind, runFind, type ObservationReader } from "../../src/observations/index.js";
import { openDatabase } from "../../src/store/index.js";
import { DAY, DAYS, START, THING_TYPES, observations } from "./data.js";

const ROWS = Number(process.env.BENCH_FIND_ROWS ?? 1_000_000);
const TYPES = THING_TYPES;
const RUNS = 5;

const dir = mkdtempSync(join(tmpdir(), "dms-find-profile-"));
const db = openDatabase({ dataDir: dir, migrations });
const { store, reader, close } = openObservations({ dataDir: dir, db, writerThread: false });
const observation = observations(ROWS);
for (let i = 0; i < ROWS; i += 50_000) {
  const batch = [];
  for (let j = i; j < Math.min(ROWS, i + 50_000); j++) batch.push({ document: observation(j) });
  await store.insertBatch(batch);
}
await store.maintain();

const since = (from: number) => ({ range: { timestamp: { gte: new Date(from).toISOString() } } });
const oneDay = {
  range: {
    timestamp: { gte: new Date(START + 10 * DAY).toISOString(), lt: new Date(START + 11 * DAY).toISOString() },
  },
};
const QUERIES: Record<string, unknown> = {
  "one day, 1h histogram with avg+max, top things": {
    size: 0,
    query: { bool: { filter: [oneDay, { term: { thingType: "3" } }] } },
    aggs: {
      per_hour: {
        date_histogram: { field: "timestamp", interval: "1h" },
        aggs: { avg: { avg: { field: "state.temp" } }, max: { max: { field: "state.temp" } } },
      },
      things: { terms: { field: "thingName", size: 10 } },
    },
  },
  "7 days, terms thingName ordered by avg temp": {
    size: 0,
    query: { bool: { filter: [since(START + (DAYS - 7) * DAY)] } },
    aggs: {
      t: {
        terms: { field: "thingName", size: 10, order: { a: "desc" } },
        aggs: { a: { avg: { field: "state.temp" } } },
      },
    },
  },
  "30 days, 1d histogram in Europe/Oslo with stats": {
    size: 0,
    query: { bool: { filter: [since(START), { term: { thingType: "2" } }] } },
    aggs: {
      d: {
        date_histogram: { field: "timestamp", interval: "day", time_zone: "Europe/Oslo" },
        aggs: { s: { stats: { field: "state.temp" } } },
      },
    },
  },
  "last 20 observations of one thing": {
    size: 20,
    query: { bool: { filter: [since(START), { term: { thingName: "thing-4-7" } }] } },
    sort: [{ timestamp: "desc" }],
  },
  "one day, hot readings count and geo bounds": {
    size: 0,
    query: { bool: { filter: [oneDay, { range: { "state.temp": { gte: 30 } } }] } },
    aggs: { g: { geo_bounds: { field: "state.latlng" } } },
  },
};

/** The same store handing out whole rows: FIND as it read before the column cache. */
const fromRows: ObservationReader = {
  candidates: (f, limit) => reader.candidates(f, limit),
  exportPage: (...page) => reader.exportPage(...page),
  scan: (f, visitor, pick) => reader.scan(f, { ...visitor, paths: undefined }, pick),
  close: async () => {},
};
/** The columns read as cut-down documents, one per row (find/vector's column path left out). */
const documentsFromColumns: ObservationReader = {
  candidates: (f, limit) => reader.candidates(f, limit),
  exportPage: (...page) => reader.exportPage(...page),
  scan: (f, visitor, pick) => reader.scan(f, visitor, pick),
  close: async () => {},
};
const timed = async (r: ObservationReader, q: unknown): Promise<number> => {
  const started = performance.now();
  await runFind(r, planFind(q, Date.now()), { thingTypes: TYPES });
  return performance.now() - started;
};
const median = (xs: number[]): number => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

console.log(
  `machine: ${cpus()[0]?.model ?? "unknown"}, ${cpus().length} cores, Node ${process.version}, ${new Date().toISOString()}; load average ${loadavg()[0]!.toFixed(1)}`,
);
console.log(`rerun: npx tsx bench/find/profile.ts (BENCH_FIND_ROWS=${ROWS}); medians of ${RUNS}, alternated`);
console.log(
  "| query | from the rows ms | columns, a document per row ms | columns, no document per row ms | last / rows | last / middle |",
);
console.log("|---|---|---|---|---|---|");
for (const [name, q] of Object.entries(QUERIES)) {
  const readers = [fromRows, documentsFromColumns, reader];
  for (const r of readers) await timed(r, q);
  const times: number[][] = readers.map(() => []);
  for (let i = 0; i < RUNS; i++) for (const [k, r] of readers.entries()) times[k]!.push(await timed(r, q));
  const [r, d, c] = times.map(median) as [number, number, number];
  console.log(
    `| ${name} | ${r.toFixed(0)} | ${d.toFixed(0)} | ${c.toFixed(0)} | ${(c / r).toFixed(3)} | ${(c / d).toFixed(3)} |`,
  );
}
console.log(`load average at the end ${loadavg()[0]!.toFixed(1)}`);

const profileFile = process.env.PROFILE;
if (profileFile) {
  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.start");
  for (let i = 0; i < RUNS; i++) for (const q of Object.values(QUERIES)) await timed(reader, q);
  const { profile } = await session.post("Profiler.stop");
  writeFileSync(profileFile, JSON.stringify(profile));
  const self = new Map<string, number>();
  const byNode = new Map(profile.nodes.map((n) => [n.id, n]));
  let total = 0;
  profile.samples?.forEach((id, i) => {
    const ms = (profile.timeDeltas?.[i] ?? 0) / 1000;
    const frame = byNode.get(id)!.callFrame;
    const key = `${frame.functionName || "(anonymous)"} ${frame.url.split("/").slice(-2).join("/")}`;
    self.set(key, (self.get(key) ?? 0) + ms);
    total += ms;
  });
  console.log(`\nself time of the column runs (${profileFile}):`);
  for (const [key, ms] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 20))
    console.log(`${((100 * ms) / total).toFixed(1).padStart(5)}%  ${key}`);
  session.disconnect();
}

await close();
db.close();
rmSync(dir, { recursive: true, force: true });
