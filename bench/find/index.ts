/**
 * FIND benchmark: a dashboard query over N observations (default 5,000,000),
 * timed against the same answer from one hand-written SQL query in the same
 * run, plus the export throughput; then the same observations in a single-node
 * OpenSearch 2.19 (scripts/opensearch.sh) and the same dashboard queries to
 * both, interleaved: FIND / OpenSearch latency per query and the indexing rate
 * of each; then the hostile phase (bench/find/hostile.ts): the engine's rate
 * and /healthz latency with and without 4 clients sending the worst FIND
 * requests, the engine fed through Kafka by a producer process.
 * Rerun: npx tsx bench/find/index.ts (BENCH_FIND_ROWS=1000000 to scale down,
 * BENCH_FIND_OPENSEARCH=0 to leave OpenSearch out, BENCH_FIND_HOSTILE_SECONDS
 * per phase, BENCH_FIND_HOSTILE=0 to leave the hostile phase out). The OpenSearch
 * indices are named after the data and kept: a later run with the same rows
 * reuses them and reports the indexing rate of the run that made them
 * (BENCH_FIND_REINDEX=1 indexes again).
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../src/config/index.js";
import Database from "better-sqlite3";
import {
  dayOf,
  DOCUMENT_SQL,
  OBSERVATIONS_FILE,
  partitionTable,
  planFind,
  runFind,
} from "../../src/observations/index.js";
import { startDms } from "../../src/service.js";
import { indexMapping } from "../../test/observations/differential/data.js";
import { fromOpenSearch, toOpenSearch } from "../../test/observations/differential/engines.js";
import { writeSection } from "../results.js";
import { Kafka, logLevel } from "kafkajs";
import { DAY, DAYS, SEED, START, THING_TYPES, THINGS_PER_TYPE, observations as generated } from "./data.js";
import { hostilePhases, percentile, worstQueries, type FeedFigures, type PhaseFigures } from "./hostile.js";

const ROWS = Number(process.env.BENCH_FIND_ROWS ?? 5_000_000);
/** Bump when the generated observations or the mapping change: an index of another layout is not reused. */
const DATA_LAYOUT = 1;
/** BENCH_FIND_REINDEX=1: index into OpenSearch again even when an index of the same data is there. */
const REINDEX = process.env.BENCH_FIND_REINDEX === "1";
const BATCH = 50_000;
const RUNS = 15;
/** Fewer runs of a query slower than this: a median of 5 of multi-second queries says as much. */
const SLOW_MS = 2000;
/** Documents per OpenSearch _bulk request (about 3 MB). */
const OPENSEARCH_BULK = 20_000;
const COMMAND = "npx tsx bench/find/index.ts";
const HOSTILE_SECONDS = Number(process.env.BENCH_FIND_HOSTILE_SECONDS ?? 20);
const HOSTILE_ROUNDS = 3;
const HOSTILE_CLIENTS = 4;
/** Observations a second of the fixed-rate feed (bench/kafka's low rate): 100 things, one reading every 50 ms each. */
const FEED_RATE = Number(process.env.BENCH_FIND_FEED_RATE ?? 2000);
const KAFKA_BROKERS = process.env.KAFKA_BROKERS ?? "127.0.0.1:9092";
/** This run's own names on the shared broker and search engine. */
const RUN_ID = `${Date.now().toString(36)}-${process.pid}`;
const API_KEY = "bench-key-000001";
/** Provisioned things the engine stream observes during the hostile phase. */
const STREAM_THINGS = Array.from({ length: 100 }, (_, i) => `stream-${i}`);

interface Bucket {
  key: number;
  doc_count: number;
  avg: { value: number | null };
  max: { value: number | null };
}
/** How fast OpenSearch took the observations, and whether this run measured it. */
interface IndexingFigures {
  rate: number;
  at: string;
  /** Load average when indexing started and ended. */
  load: string;
  now: boolean;
}
interface TermBucket {
  key: string;
  doc_count: number;
}

async function main(): Promise<void> {
  const loadAtStart = loadavg()[0]!.toFixed(1);
  const dataDir = mkdtempSync(join(tmpdir(), "dms-bench-find-"));
  const provisionFile = join(dataDir, "provision.json");
  writeFileSync(
    provisionFile,
    JSON.stringify({
      apiKeys: [API_KEY],
      domains: [{ id: "root" }],
      users: [
        {
          userName: "bench",
          password: "bench-pw",
          role: "ReadWrite",
          homeDomain: "root",
          privileges: { root: ["*.*"] },
        },
      ],
      thingTypes: THING_TYPES.map((id) => ({
        id,
        label: `Type ${id}`,
        domain: "root",
        resources: [{ name: "temp", dataType: "double", resourceType: "thing" }],
      })),
      things: STREAM_THINGS.map((thingName) => ({ thingName, thingType: "1", domain: "root" })),
    }),
  );
  const config = loadConfig({
    DMS_DATA_DIR: dataDir,
    DMS_PROVISION: provisionFile,
    DMS_ROLES: "api,engine",
    DMS_HTTP_PORT: "0",
    DMS_HTTP_HOST: "127.0.0.1",
    DMS_LOG_LEVEL: "silent",
    DMS_JWT_SECRET: "bench-secret-bench-secret-bench",
    // The engine consumes its observations from a topic of this run's own, as in production.
    KAFKA_BROKERS,
    KAFKA_OBSERVATIONS_TOPIC: `bench-find-observations-${RUN_ID}`,
    KAFKA_EVENTS_TOPIC: `bench-find-events-${RUN_ID}`,
    KAFKA_GROUP_ID: `bench-find-${RUN_ID}`,
  });
  const dms = await startDms(config);
  const { observations, observationReader, exports, identity } = dms.services;
  // The observation file, read here with SQL of the bench's own (the hand-written comparison, the
  // rows for OpenSearch): one table per UTC day (`partitionTable`).
  const db = new Database(join(dataDir, OBSERVATIONS_FILE));
  db.pragma("busy_timeout = 5000");
  /** The day tables holding [from, to), ascending. */
  const tablesOf = (from: number, to: number): string[] =>
    db
      .prepare<[number, number], { day: number }>(
        "SELECT day FROM observation_partitions WHERE day >= ? AND day <= ? ORDER BY day",
      )
      .all(dayOf(from), dayOf(to - 1))
      .map((r) => partitionTable(r.day));

  // ---- data: through the store (its writer thread), BATCH rows a transaction, a few in flight; then
  // the thing index of every closed day, built once (as the store does a minute later on its own).
  const t0 = performance.now();
  const observation = generated(ROWS);
  const loading: Promise<void>[] = [];
  for (let i = 0; i < ROWS; i += BATCH) {
    const batch = [];
    for (let j = i; j < Math.min(ROWS, i + BATCH); j++) batch.push({ document: observation(j) });
    loading.push(observations.insertBatch(batch));
    if (loading.length >= 3) await loading.shift();
  }
  await Promise.all(loading);
  const maintained = performance.now();
  await observations.maintain();
  db.exec("ANALYZE");
  const loadSeconds = (performance.now() - t0) / 1000;
  /** Of which: the thing index and the column cache of every closed day, built by the writer. */
  const maintainSeconds = (performance.now() - maintained) / 1000;

  // ---- the dashboard query
  const dayFrom = START + 10 * DAY;
  const dayTo = dayFrom + DAY;
  const request = {
    size: 0,
    query: {
      bool: {
        filter: [
          { range: { timestamp: { gte: new Date(dayFrom).toISOString(), lt: new Date(dayTo).toISOString() } } },
          { term: { thingType: "3" } },
        ],
      },
    },
    aggs: {
      per_hour: {
        date_histogram: { field: "timestamp", interval: "1h" },
        aggs: { avg: { avg: { field: "state.temp" } }, max: { max: { field: "state.temp" } } },
      },
      things: { terms: { field: "thingName", size: 10 } },
    },
  };
  const find = () => runFind(observationReader, planFind(request, Date.now()), { thingTypes: THING_TYPES });

  const dayTables = tablesOf(dayFrom, dayTo);
  const sql = db.prepare<
    (string | number)[],
    { k: string; key: number | string; n: number; a: number | null; m: number | null }
  >(
    `SELECT 'h' AS k, (ts / 3600000) * 3600000 AS key, count(*) AS n, avg(t) AS a, max(t) AS m
       FROM (${dayTables
         .map(
           (table) => `SELECT ts, json_extract(doc, '$.state.temp') AS t FROM ${table} INDEXED BY ${table}_type_ts
              WHERE thing_type = ? AND ts >= ? AND ts < ?`,
         )
         .join(" UNION ALL ")}) GROUP BY 2
     UNION ALL
     SELECT 't', thing_name, count(*), NULL, NULL
       FROM (${dayTables
         .map(
           (table) => `SELECT thing_name FROM ${table} INDEXED BY ${table}_type_ts
              WHERE thing_type = ? AND ts >= ? AND ts < ?`,
         )
         .join(" UNION ALL ")}) GROUP BY thing_name`,
  );
  const sqlArgs = [...dayTables, ...dayTables].flatMap(() => ["3", dayFrom, dayTo]);
  const handWritten = () => {
    const rows = sql.all(...sqlArgs);
    const hours = rows.filter((r) => r.k === "h").sort((x, y) => Number(x.key) - Number(y.key));
    const terms = rows
      .filter((r) => r.k === "t")
      .sort((x, y) => y.n - x.n || String(x.key).localeCompare(String(y.key)))
      .slice(0, 10);
    return {
      total: hours.reduce((s, r) => s + r.n, 0),
      hours: hours.map((r) => ({ key: Number(r.key), doc_count: r.n, avg: r.a, max: r.m })),
      terms: terms.map((r) => ({ key: String(r.key), doc_count: r.n })),
    };
  };

  // Same answer, checked before timing.
  const es = (await find()) as {
    hits: { total: number };
    aggregations: { per_hour: { buckets: Bucket[] }; things: { buckets: TermBucket[] } };
  };
  const ref = handWritten();
  const esAnswer = {
    total: es.hits.total,
    hours: es.aggregations.per_hour.buckets.map((b) => ({
      key: b.key,
      doc_count: b.doc_count,
      avg: b.avg.value,
      max: b.max.value,
    })),
    terms: es.aggregations.things.buckets,
  };
  const same =
    esAnswer.total === ref.total &&
    JSON.stringify(esAnswer.terms) === JSON.stringify(ref.terms) &&
    esAnswer.hours.length === ref.hours.length &&
    esAnswer.hours.every((h, i) => {
      const r = ref.hours[i]!;
      return (
        h.key === r.key &&
        h.doc_count === r.doc_count &&
        Math.abs((h.avg ?? 0) - (r.avg ?? 0)) < 1e-9 &&
        h.max === r.max
      );
    });
  if (!same)
    throw new Error(
      `FIND and SQL disagree:\n${JSON.stringify(esAnswer).slice(0, 400)}\n${JSON.stringify(ref).slice(0, 400)}`,
    );

  // Interleaved, so that the load of this shared machine falls on both alike; medians.
  const findTimes: number[] = [];
  const sqlTimes: number[] = [];
  await find();
  handWritten();
  for (let i = 0; i < RUNS; i++) {
    let s = performance.now();
    await find();
    findTimes.push(performance.now() - s);
    s = performance.now();
    handWritten();
    sqlTimes.push(performance.now() - s);
  }
  const median = (xs: number[]): number => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const findMs = median(findTimes);
  const sqlMs = median(sqlTimes);

  /** Indexes the observations into OpenSearch, runs the dashboard queries on both, and answers the table rows. */
  async function againstOpenSearch(): Promise<string[]> {
    const out = execFileSync("bash", [new URL("../../scripts/opensearch.sh", import.meta.url).pathname, "start"], {
      encoding: "utf8",
    });
    const url = /OPENSEARCH_URL=(\S+)/.exec(out)![1]!;
    const call = async (method: string, path: string, body?: unknown): Promise<Record<string, unknown>> => {
      const res = await fetch(`${url}${path}`, {
        method,
        headers: { "content-type": typeof body === "string" ? "application/x-ndjson" : "application/json" },
        body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
      });
      return (await res.json()) as Record<string, unknown>;
    };
    // The indices are named after the data (seed, rows, days, layout) and kept: a run finding them
    // with every observation of the store in them queries them as they are, so the query phase can
    // run on a quiet box without indexing millions of documents again (BENCH_FIND_REINDEX=1 does).
    const indexOf = (t: string): string => `bench-find-s${SEED}-r${ROWS}-d${DAYS}-v${DATA_LAYOUT}-${t}`;
    const indices = THING_TYPES.map(indexOf);
    const storedOfType = (t: string): number =>
      tablesOf(-8.64e15, 8.64e15).reduce(
        (n, table) =>
          n + db.prepare<[string], { n: number }>(`SELECT count(*) AS n FROM ${table} WHERE thing_type = ?`).get(t)!.n,
        0,
      );
    let complete = !REINDEX;
    for (const t of THING_TYPES) {
      if (!complete) break;
      const counted = await call("GET", `/${indexOf(t)}/_count`);
      complete = counted.count === storedOfType(t);
    }
    const indexing = complete ? await indexedEarlier(indices[0]!) : await indexAll();

    /** Indexes every stored observation into fresh indices; answers how fast, as measured now. */
    async function indexAll(): Promise<IndexingFigures> {
      for (const index of indices) {
        await call("DELETE", `/${index}`);
        await call("PUT", `/${index}`, {
          ...indexMapping(["latlng"]),
          // A bulk load: no replica, no refresh and no fsync per request until it is done.
          settings: {
            number_of_shards: 1,
            number_of_replicas: 0,
            refresh_interval: "-1",
            "translog.durability": "async",
          },
        });
      }
      // The same documents from the store, bulk-indexed BULK at a time with ids of OpenSearch's own
      // (no lookup of an existing id per document), the next request read while one is indexed;
      // the answer filtered to its errors, so that the client does not parse an item per document.
      const pages = tablesOf(-8.64e15, 8.64e15).map((table) =>
        db.prepare<[number, number], { id: number; thing_type: string; doc: string }>(
          // The whole document, as every reader gets it: the engine's rows are stored lean (rows.ts).
          `SELECT id, thing_type, ${DOCUMENT_SQL} AS doc FROM ${table} WHERE id > ? ORDER BY id LIMIT ?`,
        ),
      );
      const bulk = async (page: { thing_type: string; doc: string }[]): Promise<void> => {
        const lines = page.flatMap((r) => [`{"index":{"_index":"${indexOf(r.thing_type)}"}}`, r.doc]);
        const res = await call("POST", "/_bulk?filter_path=errors,items.*.error", `${lines.join("\n")}\n`);
        if (res.errors !== false) throw new Error(`bulk indexing failed: ${JSON.stringify(res).slice(0, 300)}`);
      };
      const loadBefore = loadavg()[0]!;
      const started = performance.now();
      let inFlight: Promise<void> = Promise.resolve();
      for (const rows of pages) {
        for (let after = 0; ;) {
          const page = rows.all(after, OPENSEARCH_BULK);
          if (page.length === 0) break;
          after = page[page.length - 1]!.id;
          await inFlight;
          inFlight = bulk(page);
        }
      }
      await inFlight;
      await call("PUT", `/${indices.join(",")}/_settings`, {
        index: { refresh_interval: "1s", "translog.durability": "request" },
      });
      await call("POST", "/_refresh");
      await call("POST", "/_forcemerge?max_num_segments=1");
      const figures: IndexingFigures = {
        rate: Math.round(ROWS / ((performance.now() - started) / 1000)),
        at: new Date().toISOString(),
        load: `${loadBefore.toFixed(1)}-${loadavg()[0]!.toFixed(1)}`,
        now: true,
      };
      // Kept with the index, for the runs that reuse it.
      await call("PUT", `/${indices[0]!}/_mapping`, { _meta: { benchIndexing: figures } });
      return figures;
    }

    /** The indexing figures of the run that made the indices. */
    async function indexedEarlier(index: string): Promise<IndexingFigures> {
      const mapping = await call("GET", `/${index}/_mapping`);
      const meta = (mapping[index] as { mappings?: { _meta?: { benchIndexing?: IndexingFigures } } } | undefined)
        ?.mappings?._meta?.benchIndexing;
      return { rate: meta?.rate ?? NaN, at: meta?.at ?? "unknown", load: meta?.load ?? "unknown", now: false };
    }
    const allDays = { range: { timestamp: { gte: new Date(START).toISOString() } } };
    const lastWeek = { range: { timestamp: { gte: new Date(START + (DAYS - 7) * DAY).toISOString() } } };
    const queries: [string, Record<string, unknown>][] = [
      ["one day, 1h histogram with avg+max, top things (above)", request],
      [
        "7 days, terms thingName size 10 ordered by avg temp",
        {
          size: 0,
          query: { bool: { filter: [lastWeek] } },
          aggs: {
            t: {
              terms: { field: "thingName", size: 10, order: { a: "desc" } },
              aggs: { a: { avg: { field: "state.temp" } } },
            },
          },
        },
      ],
      [
        "30 days, 1d histogram in Europe/Oslo with stats",
        {
          size: 0,
          query: { bool: { filter: [allDays, { term: { thingType: "2" } }] } },
          aggs: {
            d: {
              date_histogram: { field: "timestamp", interval: "day", time_zone: "Europe/Oslo" },
              aggs: { s: { stats: { field: "state.temp" } } },
            },
          },
        },
      ],
      [
        "last 20 observations of one thing",
        {
          size: 20,
          query: { bool: { filter: [allDays, { term: { thingName: "thing-4-7" } }] } },
          sort: [{ timestamp: "desc" }],
        },
      ],
      [
        "one day, hot readings count and geo bounds",
        {
          size: 0,
          query: { bool: { filter: [request.query.bool.filter[0]!, { range: { "state.temp": { gte: 30 } } }] } },
          aggs: { g: { geo_bounds: { field: "state.latlng" } } },
        },
      ],
    ];
    const indexPath = `/${indices.join(",")}/_search?rest_total_hits_as_int=true&request_cache=false`;
    const rowsOut = [
      "",
      `same run, OpenSearch 2.19 single node (scripts/opensearch.sh, -Xmx1g, one shard per thing type, ${indices.length} shards, force-merged); FIND in process, OpenSearch over loopback HTTP; totals checked equal; median of ${RUNS} runs interleaved (5 for a query whose FIND run takes over ${SLOW_MS / 1000} s):`,
      "",
      "| query | FIND ms | OpenSearch ms | FIND / OpenSearch (goal <= 1.0) | runs | FIND first run ms (builds the column cache of the days no query read before) |",
      "|---|---|---|---|---|---|",
    ];
    for (const [name, q] of queries) {
      const translated = toOpenSearch(q, new Set());
      const osSearch = async () => fromOpenSearch(await call("POST", indexPath, translated), q);
      const run = () => runFind(observationReader, planFind(q, Date.now()), { thingTypes: THING_TYPES });
      // The first run of a query takes apart the closed days it reads that no query read before.
      const cold = performance.now();
      const mine = (await run()) as { hits: { total: number } };
      const firstMs = performance.now() - cold;
      const theirs = (await osSearch()) as { hits: { total: number } };
      if (mine.hits.total !== theirs.hits.total)
        throw new Error(`${name}: FIND ${mine.hits.total} hits, OpenSearch ${theirs.hits.total}`);
      const a: number[] = [];
      const b: number[] = [];
      await osSearch();
      const first = performance.now();
      await run();
      const runs = performance.now() - first > SLOW_MS ? 5 : RUNS;
      for (let i = 0; i < runs; i++) {
        let t = performance.now();
        await run();
        a.push(performance.now() - t);
        t = performance.now();
        await osSearch();
        b.push(performance.now() - t);
      }
      const fa = median(a);
      const fb = median(b);
      rowsOut.push(
        `| ${name} | ${fa.toFixed(1)} | ${fb.toFixed(1)} | ${(fa / fb).toFixed(2)} | ${runs} | ${firstMs.toFixed(0)} |`,
      );
    }
    rowsOut.push(
      "",
      `| indexing | rate |`,
      `|---|---|`,
      `| dms store (prepared inserts, one transaction per 50k, indexes rebuilt after) | ${Math.round(ROWS / loadSeconds).toLocaleString("en")} observations/s |`,
      `| OpenSearch (_bulk of ${OPENSEARCH_BULK.toLocaleString("en")} over loopback, one in flight while the next is read, no replica, refresh off, async translog; then refresh + force merge) | ${indexing.rate.toLocaleString("en")} observations/s (${indexing.now ? "this run" : `measured by the run that made the indices, ${indexing.at}; this run reused them (BENCH_FIND_REINDEX=1 indexes again)`}, load ${indexing.load}) |`,
    );
    return rowsOut;
  }

  // ---- export throughput: one day of every thing type
  const principal = identity.principal("bench")!;
  const job = await exports.service.create(principal, {
    jobName: "bench",
    type: "instant",
    things: undefined,
    thingType: "3",
    from: new Date(START).toISOString(),
    to: new Date(START + 5 * DAY).toISOString(),
    resources: ["temp", "latlng"],
  });
  await new Promise((r) => setTimeout(r, 10));
  await exports.runner.idle();
  const execution = (await exports.service.executions(principal, job.id, { size: 1, order: "desc" }))
    .exportJobExecutions[0]!;
  const detail = await exports.service.execution(principal, execution.id);
  const exportRows = tablesOf(START, START + 5 * DAY).reduce(
    (n, table) =>
      n +
      db
        .prepare<[number, number], { n: number }>(
          `SELECT count(*) AS n FROM ${table} WHERE thing_type = '3' AND ts >= ? AND ts < ?`,
        )
        .get(START, START + 5 * DAY)!.n,
    0,
  );
  const rowsPerSecond = Math.round(exportRows / (detail.engineExecutionTimeInMillis / 1000));
  const fileBytes = (await exports.files.size(execution.id)) ?? 0;

  // ---- the same observations and dashboard queries in OpenSearch
  const vsOpenSearch = process.env.BENCH_FIND_OPENSEARCH === "0" ? [] : await againstOpenSearch();
  // ---- hostile phase: worst FIND requests against the engine's rate and /healthz
  const hostileTable = process.env.BENCH_FIND_HOSTILE === "0" ? [] : await hostileSection();
  db.close();
  await dms.close();
  rmSync(dataDir, { recursive: true, force: true });
  await deleteTopics([config.KAFKA_OBSERVATIONS_TOPIC, config.KAFKA_EVENTS_TOPIC]);

  /** Feeds the engine through Kafka with and without the hostile clients; answers the section's lines. */
  async function hostileSection(): Promise<string[]> {
    const login = await fetch(`${dms.url}/auth/login`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": API_KEY },
      body: JSON.stringify({ userName: "bench", password: "bench-pw" }),
    });
    const token = ((await login.json()) as { credentials: { token: string } }).credentials.token;
    const names = Array.from({ length: 40_000 }, (_, i) =>
      i < 500 ? `thing-${THING_TYPES[i % 5]}-${Math.floor(i / 5)}` : `nobody-${i}`,
    );
    const hostileFrom = new Date(START + 10 * DAY).toISOString();
    const hostileTo = new Date(START + 15 * DAY).toISOString();
    const counter = dms.services.metrics.registry.getSingleMetric("dms_engine_observations_total")!;
    const evaluated = async (): Promise<number> => (await counter.get()).values[0]?.value ?? 0;
    // The consumer joins its group in the background: the phases start once /readyz says it has.
    const topic = config.KAFKA_OBSERVATIONS_TOPIC;
    while ((await fetch(`${dms.url}/readyz`)).status !== 200) await new Promise((r) => setTimeout(r, 200));
    const { fixed, max } = await hostilePhases({
      evaluated,
      url: dms.url!,
      token,
      apiKey: API_KEY,
      brokers: KAFKA_BROKERS,
      topic,
      streamThings: STREAM_THINGS,
      queries: worstQueries(hostileFrom, hostileTo, names),
      seconds: HOSTILE_SECONDS,
      rounds: HOSTILE_ROUNDS,
      clients: HOSTILE_CLIENTS,
      rate: FEED_RATE,
    });
    const answered = (f: PhaseFigures): string =>
      Object.entries(f.statuses)
        .map(([status, n]) => `${n} x ${status}`)
        .join(", ") || "none";
    const refusals = Object.entries({ ...fixed.hostile.refusals })
      .concat(Object.entries(max.hostile.refusals))
      .reduce<Record<string, number>>((acc, [why, n]) => ({ ...acc, [why]: (acc[why] ?? 0) + n }), {});
    const ms = (x: number): string => `${x.toFixed(1)} ms`;
    const rows = (label: string, feed: FeedFigures, healthTarget: string): string[] => {
      const { quiet, hostile } = feed;
      return [
        `| ${label}: observations/s produced | ${Math.round(quiet.producedRate).toLocaleString("en")} | ${Math.round(hostile.producedRate).toLocaleString("en")} | |`,
        `| ${label}: engine observations/s | ${Math.round(quiet.engineRate).toLocaleString("en")} | ${Math.round(hostile.engineRate).toLocaleString("en")} | ${(hostile.engineRate / quiet.engineRate).toFixed(2)} (>= 0.8) |`,
        `| ${label}: GET /healthz p50 | ${ms(percentile(quiet.healthzMs, 0.5))} | ${ms(percentile(hostile.healthzMs, 0.5))} | |`,
        `| ${label}: GET /healthz p99 | ${ms(percentile(quiet.healthzMs, 0.99))} | ${ms(percentile(hostile.healthzMs, 0.99))} | ${healthTarget} |`,
        `| ${label}: GET /healthz max | ${ms(Math.max(...quiet.healthzMs))} | ${ms(Math.max(...hostile.healthzMs))} | |`,
        `| ${label}: event-loop delay p99 / max | ${ms(quiet.loopDelayP99Ms)} / ${ms(quiet.loopDelayMaxMs)} | ${ms(hostile.loopDelayP99Ms)} / ${ms(hostile.loopDelayMaxMs)} | |`,
        `| ${label}: service thread CPU (share of wall time) | ${Math.round(quiet.threadCpu * 100)}% | ${Math.round(hostile.threadCpu * 100)}% | |`,
        `| ${label}: /healthz samples | ${quiet.healthzMs.length} | ${hostile.healthzMs.length} | |`,
        `| ${label}: hostile FIND answers | ${answered(quiet)} | ${answered(hostile)} | no 5xx |`,
      ];
    };
    return [
      "",
      `hostile phase: for each feed, ${HOSTILE_ROUNDS} rounds of (${HOSTILE_SECONDS} s quiet, ${HOSTILE_SECONDS} s hostile), alternated. The engine consumes its observations from a Kafka topic of its own (6 partitions, broker on loopback) as in production; a producer in a child process writes observations of ${STREAM_THINGS.length} things to it, at ${FEED_RATE.toLocaleString("en")}/s (fixed feed) and as fast as the broker acknowledges (max feed: a backlog the engine drains at its own rate). /healthz polled sequentially from a separate process (5 ms pause); ${HOSTILE_CLIENTS} hostile clients in a third process at nice 19 (they stand for remote callers) each sending the ${worstQueries("", "", []).length} worst requests of bench/find/hostile.ts in turn over 5 days (${Math.round(ROWS / 6).toLocaleString("en")} observations); FIND on ${config.DMS_FIND_THREADS} thread(s), budget ${config.DMS_FIND_TIMEOUT_MS} ms`,
      "",
      "| figure | quiet | 4 hostile clients | ratio / target |",
      "|---|---|---|---|",
      ...rows(`fixed ${FEED_RATE.toLocaleString("en")}/s`, fixed, "<= 50 ms"),
      ...rows("max feed", max, ""),
      "",
      `hostile refusals: ${
        Object.entries(refusals)
          .sort((x, y) => y[1] - x[1])
          .map(([why, n]) => `${n} x "${why}..."`)
          .join("; ") || "none"
      }`,
    ];
  }

  const header = [
    `machine: ${cpus()[0]?.model ?? "unknown"}, ${cpus().length} cores, Node ${process.version}, ${new Date().toISOString()}; load average at the start ${loadAtStart}, at the end ${loadavg()[0]!.toFixed(1)} (shared with other work)`,
    `rerun: \`${COMMAND}\`${ROWS === 5_000_000 ? "" : ` (BENCH_FIND_ROWS=${ROWS})`}`,
    `data: ${ROWS.toLocaleString("en")} observations over ${DAYS} days, ${THING_TYPES.length} thing types x ${THINGS_PER_TYPE} things; loaded in ${loadSeconds.toFixed(1)} s (prepared insert, one transaction per 50k rows; then ${maintainSeconds.toFixed(1)} s of it: the thing index and the column cache of every closed day)`,
    `dashboard query: one day, term thingType, date_histogram 1h with avg+max of state.temp, terms thingName size 10: ${es.hits.total.toLocaleString("en")} matching observations; answers checked equal before timing; median of ${RUNS}`,
  ];
  const table = [
    "| figure | value |",
    "|---|---|",
    `| FIND (plan + SQLite pushdown + evaluation + aggregations) | ${findMs.toFixed(1)} ms |`,
    `| one hand-written SQL query (json_extract, GROUP BY) | ${sqlMs.toFixed(1)} ms |`,
    `| ratio FIND / SQL (target <= 1.5) | ${(findMs / sqlMs).toFixed(2)} |`,
    `| export: ${exportRows.toLocaleString("en")} rows to CSV.gz (${(fileBytes / 1e6).toFixed(1)} MB) | ${rowsPerSecond.toLocaleString("en")} rows/s (${detail.engineExecutionTimeInMillis} ms) |`,
  ];
  const section = [...header.map((l) => `${l}  `), "", ...table, ...vsOpenSearch, ...hostileTable].join("\n");
  console.log(`## bench/find\n\n${section}\n`);
  writeSection("find", `## bench/find\n\n${section}\n`);
}

/** The shared broker keeps no topic of this run. */
async function deleteTopics(topics: string[]): Promise<void> {
  const admin = new Kafka({
    clientId: "bench-find",
    brokers: KAFKA_BROKERS.split(","),
    logLevel: logLevel.NOTHING,
  }).admin();
  await admin.connect();
  const existing = new Set(await admin.listTopics());
  await admin.deleteTopics({ topics: topics.filter((t) => existing.has(t)) }).catch(() => {});
  await admin.disconnect();
}

await main();
