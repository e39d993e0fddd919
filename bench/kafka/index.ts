import { loadConfig } from "../../src/config/index.js";
/**
 * End to end through the real broker (bench/kafka).
 * `npx tsx bench/kafka/index.ts [observations]` (default 300,000, so that it runs in minutes on a shared machine).
 * `KAFKA_ONLY=durable` runs only the in-memory and durable engines, in alternating rounds (`KAFKA_ROUNDS`, 2), and writes nothing.
 */
import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { Worker } from "node:worker_threads";
import { Kafka, logLevel } from "kafkajs";
import type { ActionSink, TriggeredAction } from "../../src/actions/index.js";
import {
  SqliteDeadLetterStore,
  decodeMessages,
  engineFeed,
  KafkaObservationSource,
  MemoryStateStore,
  RuleEngine,
  SqliteStateStore,
  type RawObservation,
} from "../../src/engine/index.js";
import { packChunk, unpackChunk } from "../../src/engine/sources/kafka-chunks.js";
import { migrations } from "../../src/migrations.js";
import { openObservations } from "../../src/observations/index.js";
import type { Rule } from "../../src/rules/index.js";
import { openDatabase, startCheckpointer } from "../../src/store/index.js";
import { createTopic, startKafka } from "../../test/support/kafka.js";
import { recordFigures } from "../charts.js";
import { fmt, header, loadAverage, table, writeSection } from "../engine/report.js";
import { perObservation, processCpuSeconds, ThreadCpu } from "../engine/threads.js";
import { platformaticConsumer } from "./peer.js";
import { thingResolver, workload, WORKLOAD_EPOCH_MS } from "../engine/workload.js";
import { runStreams, STREAMS_RUNS, streamsSection } from "./streams/index.js";

/** The engine as the service runs it, by default (`DMS_ENGINE_*` in the environment change it, as for the service). */
const service = loadConfig(process.env);

const N = Number(process.argv[2] ?? 300_000);
const BROKER_PID_FILE = `/tmp/dms-kafka-${process.env.KAFKA_PORT ?? 9092}/kafka.pid`;
const PARTITIONS = 6;
/** The Kafka source's chunk, and the chunks it keeps in flight: the in-process engines are fed alike. */
const CHUNK = 5000;
const CHUNKS_IN_FLIGHT = 3;
const LATENCY_RATE = 10_000;
const LATENCY_SECONDS = 10;
/** A second, lower rate: the pipeline's own latency when the box keeps up. */
const LOW_RATE = 2_000;
/** Between the two, for the latency chart (bench/charts/kafka-latency.svg). */
const MID_RATE = 5_000;
const log = (...a: unknown[]): void => console.error(...a);
/** The broker of scripts/kafka.sh, whose CPU per observation is reported beside the engine's threads (0: not read). */
const BROKER_PID = Number(
  process.env.KAFKA_BROKER_PID ?? (existsSync(BROKER_PID_FILE) ? readFileSync(BROKER_PID_FILE, "utf8").trim() : 0),
);

const brokers = await startKafka();
const kafka = new Kafka({ clientId: "bench-kafka", brokers: brokers.split(","), logLevel: logLevel.NOTHING });
const run = randomUUID().slice(0, 8);
const topic = `bench-observations-${run}`;
await createTopic(brokers, topic, PARTITIONS);

const w = workload({ thingsPerType: 100 });
// The latency probes come from one thing of their own type.
const resolveThing = thingResolver([...w.things, { thingName: "latency", thingType: "LAT" }]);

const producer = kafka.producer({ allowAutoTopicCreation: false });
await producer.connect();
log(`producing ${fmt(N)} observations to ${topic} (${PARTITIONS} partitions)`);
const t0 = performance.now();
for (let start = 0; start < N; start += 2000) {
  const messages = [];
  for (let i = start; i < Math.min(N, start + 2000); i++) messages.push({ key: w.thingOf(i), value: w.message(i) });
  await producer.send({ topic, messages });
}
log(`produced in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

// ---- raw consumers: no-op handlers ----

async function rawKafkajs(): Promise<number> {
  const consumer = kafka.consumer({ groupId: `raw-${randomUUID()}`, maxBytes: 10 * 1024 * 1024 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  let seen = 0;
  let first = 0;
  let done!: (seconds: number) => void;
  const finished = new Promise<number>((r) => (done = r));
  await consumer.run({
    eachBatch: async ({ batch }) => {
      if (first === 0) first = performance.now();
      seen += batch.messages.length;
      if (seen >= N) done((performance.now() - first) / 1000);
    },
  });
  const seconds = await finished;
  await consumer.disconnect();
  return N / seconds;
}

async function rawPlatformatic(): Promise<number> {
  const PlatformaticConsumer = await platformaticConsumer();
  const consumer = new PlatformaticConsumer({
    groupId: `raw-pk-${randomUUID()}`,
    clientId: "bench-platformatic",
    bootstrapBrokers: brokers.split(","),
  });
  const stream = await consumer.consume({
    autocommit: false,
    topics: [topic],
    mode: "earliest",
    maxBytes: 10 * 1024 * 1024,
  });
  let seen = 0;
  let first = 0;
  const seconds = await new Promise<number>((resolve) => {
    stream.on("data", () => {
      if (first === 0) first = performance.now();
      if (++seen === N) resolve((performance.now() - first) / 1000);
    });
  });
  await stream.close();
  await consumer.close(true);
  return N / seconds;
}

// ---- the dms engine ----

const latencyRule: Rule = {
  id: "latency",
  name: "every latency probe",
  enabled: true,
  filter: { domain: "root", thingType: "LAT" },
  expression: [{ operator: "gte", resource: "probe", value: 0 }],
  threshold: { count: 1, interval: 0 },
  actions: [{ type: "EVENT", config: { classification: "INTERNAL", message: "probe" } }],
};

class TimingSink implements ActionSink {
  readonly latencies: number[] = [];
  /** The workload's firings, which the Kafka Streams peer's must equal. */
  triggered = 0;
  async accept(actions: readonly TriggeredAction[]): Promise<void> {
    const now = Date.now();
    for (const a of actions)
      if (a.ruleId === "latency") this.latencies.push(now - a.payload.observation.timestamp);
      else this.triggered++;
  }
}

/** Where an engine run's observations come from: the topic through the Kafka source, or the same messages in process. */
type Feed =
  { kind: "kafka"; topic: string; fetchThread: boolean } | { kind: "in process"; chunks: readonly RawObservation[][] };

async function engineRun(
  durable: boolean,
  sink: ActionSink,
  feed: Feed,
  until: () => boolean,
  onReady: () => void = () => {},
  /** Whether the durable engine's state is written by a thread of its own; by default as the service does. */
  stateWriterThread = service.DMS_ENGINE_STATE_THREAD,
) {
  const dir = mkdtempSync(join(tmpdir(), "dms-bench-kafka-"));
  const db = openDatabase({ dataDir: dir, migrations });
  // CPU by thread from the first batch to the last (threads of earlier runs have ended), and the broker's.
  const threads = new ThreadCpu();
  // As the service runs the engine: WAL checkpoints on their own thread.
  const checkpointer = threads.label(["WAL checkpointer (dms.sqlite)"], () => startCheckpointer(db));
  // As the service runs it: observations in their own file, written by a thread of their own. The
  // store's clock is the workload's time, as for a live stream: their day is open (see bench/engine/durable.ts).
  const observations = durable
    ? threads.label(["WAL checkpointer (observations)", "observation writer", "column builder"], () =>
        openObservations({ dataDir: dir, db, writerThread: true, clock: () => WORKLOAD_EPOCH_MS }),
      )
    : undefined;
  // As the service runs it (service.DMS_ENGINE_STATE_THREAD).
  const state = durable ? new SqliteStateStore(db, { writerThread: stateWriterThread }) : new MemoryStateStore();
  const engine = new RuleEngine({
    resolveThing,
    state,
    sink,
    observations: observations?.store,
    deadLetters: new SqliteDeadLetterStore(db),
  });
  engine.load([...w.rules, latencyRule]);
  let seen = 0;
  let first = 0;
  let last = 0;
  let threads0 = new Map<number, number>();
  let broker0 = 0;
  const firstBatch = (): void => {
    first = performance.now();
    // Threads started by now (module loaders of the writers, the fetch thread) are told apart from the state writer, started later.
    threads.labelNew(feed.kind === "kafka" && feed.fetchThread ? "kafka fetch thread and others" : "other threads");
    threads0 = threads.snapshot();
    broker0 = processCpuSeconds(BROKER_PID);
  };
  // As the service: chunks decoded and handed over in order (`engineFeed`), offsets committed once a checkpoint covers them.
  const handle = engineFeed(decodeMessages, async (batch) => {
    if (first === 0) firstBatch();
    const handled = await engine.handle(batch);
    seen += batch.length;
    last = performance.now();
    return handled;
  });
  const healthz = await healthzProbe();
  let source: KafkaObservationSource | undefined;
  if (feed.kind === "kafka") {
    source = new KafkaObservationSource({
      brokers: brokers.split(","),
      topic: feed.topic,
      groupId: `dms-${randomUUID()}`,
      checkpoint: () => engine.checkpoint(),
      fetchThread: feed.fetchThread,
    });
    await source.start(handle);
    await source.ready;
    onReady();
    while (!until() && !(feed.topic === topic && seen >= N)) await new Promise((r) => setTimeout(r, 20));
  } else {
    // As the Kafka source feeds the engine: chunks in flight, the oldest awaited once there are as many as it keeps.
    const inFlight: Promise<unknown>[] = [];
    for (const chunk of feed.chunks) {
      inFlight.push(handle(chunk));
      if (inFlight.length >= CHUNKS_IN_FLIGHT) await inFlight.shift();
    }
    await Promise.all(inFlight);
  }
  // The state of every observation counted is durable in the time measured: a last checkpoint.
  if (durable && seen >= N) {
    await engine.checkpoint();
    last = performance.now();
  }
  const healthzMs = await healthz.stop();
  threads.labelNew("state writer");
  const cpu = new Map<string, number>();
  threads.add(threads0, threads.snapshot(), cpu);
  cpu.set("Kafka broker (JVM)", processCpuSeconds(BROKER_PID) - broker0);
  const name = `${durable ? "durable" : "in memory"}, ${feed.kind === "kafka" ? `kafka${feed.fetchThread ? "" : " (no fetch thread)"}` : "in process"}`;
  log(`  ${name}: ${perObservation(cpu, seen)}; /healthz p99 ${fmt(pct(healthzMs, 99), 1)} ms`);
  await source?.stop();
  await observations?.close();
  if (state instanceof SqliteStateStore) await state.close();
  await checkpointer.stop();
  db.close();
  rmSync(dir, { recursive: true, force: true });
  const us = (labels: (label: string) => boolean): number =>
    (1e6 * [...cpu].filter(([label]) => labels(label)).reduce((sum, [, sec]) => sum + sec, 0)) / seen;
  return {
    rate: seen / ((last - first) / 1000),
    healthzMs,
    // CPU per observation, which the box's load moves less than rates: the engine's thread, and every thread of the process.
    mainUs: us((label) => label === "engine (main)"),
    processUs: us((label) => label !== "Kafka broker (JVM)"),
  };
}

/**
 * `/healthz` on the engine's thread (node:http, as the service's answers from the event loop the
 * engine shares), asked every 10 ms by a client on a thread of its own: the engine's thread must
 * stay free for REST, MQTT and the proxy whatever the feed. `stop` answers the latencies, sorted.
 */
async function healthzProbe(): Promise<{ stop(): Promise<number[]> }> {
  const server = createServer((_req, res) => res.end("ok"));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  const client = new Worker(
    `const { parentPort, workerData } = require("node:worker_threads");
     const http = require("node:http");
     const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
     const ms = [];
     let running = true;
     parentPort.on("message", () => { running = false; });
     const ask = () => {
       if (!running) return parentPort.postMessage(ms);
       const t = performance.now();
       http.get({ host: "127.0.0.1", port: workerData, path: "/healthz", agent }, (res) => {
         res.resume();
         res.on("end", () => { ms.push(performance.now() - t); setTimeout(ask, 10); });
       }).on("error", () => setTimeout(ask, 10));
     };
     ask();`,
    { eval: true, workerData: port },
  );
  return {
    async stop() {
      const ms = new Promise<number[]>((r) => client.once("message", r));
      client.postMessage("stop");
      const sorted = (await ms).sort((a, b) => a - b);
      await client.terminate();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      return sorted;
    },
  };
}

/** The topic's messages as the raw consumer reads them, chunked per fetched batch as the Kafka source chunks them. */
async function readTopic(): Promise<RawObservation[][]> {
  const consumer = kafka.consumer({
    groupId: `copy-${randomUUID()}`,
    maxBytes: 10 * 1024 * 1024,
    maxBytesPerPartition: 10 * 1024 * 1024,
  });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const chunks: RawObservation[][] = [];
  let seen = 0;
  let done!: () => void;
  const finished = new Promise<void>((r) => (done = r));
  const source = `kafka:${topic}`;
  await consumer.run({
    eachBatch: async ({ batch }) => {
      const { partition, messages } = batch;
      for (let start = 0; start < messages.length; start += CHUNK) {
        const chunk = messages.slice(start, start + CHUNK).map((m) => ({
          key: m.key ? m.key.toString("utf8") : null,
          value: m.value ?? Buffer.alloc(0),
          position: { source, partition, offset: m.offset, epoch: 0 },
        }));
        // As the fetch thread posts it: the values views of one buffer, the engine's input the same either way.
        chunks.push(unpackChunk(packChunk(chunk)));
      }
      seen += messages.length;
      if (seen >= N) done();
    },
  });
  await finished;
  await consumer.disconnect();
  return chunks;
}

const pct = (lat: readonly number[], p: number): number =>
  lat[Math.min(lat.length - 1, Math.floor((p / 100) * lat.length))] ?? NaN;

log("raw kafkajs consumer");
const kafkajsRate = await rawKafkajs();
log(`  ${fmt(kafkajsRate)} obs/s`);
log("raw @platformatic/kafka consumer");
const platformaticRate = await rawPlatformatic().catch((err: unknown) => {
  log(`  failed: ${String(err)}`);
  return NaN;
});
log(`  ${fmt(platformaticRate)} obs/s`);
log("the topic's messages, read once to feed the in-process engines");
const chunks = await readTopic();

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length === 0 ? NaN : s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const inProcess: Feed = { kind: "in process", chunks };
const throughKafka: Feed = { kind: "kafka", topic, fetchThread: true };
const runs = {
  memoryInProcess: { label: "in memory, in process (the same messages, no broker)", durable: false, feed: inProcess },
  memoryKafka: { label: "in memory, through Kafka", durable: false, feed: throughKafka },
  durableInProcess: { label: "durable, in process (the same messages, no broker)", durable: true, feed: inProcess },
  durableKafka: { label: "durable, through Kafka", durable: true, feed: throughKafka },
  durableKafkaOneThread: {
    label: "durable, through Kafka, fetch on the engine's thread",
    durable: true,
    feed: { kind: "kafka", topic, fetchThread: false } as Feed,
  },
};
type RunName = keyof typeof runs;
const names = Object.keys(runs) as RunName[];
const rates = Object.fromEntries(names.map((k) => [k, [] as number[]])) as Record<RunName, number[]>;
const healthzP99 = Object.fromEntries(names.map((k) => [k, [] as number[]])) as Record<RunName, number[]>;
const mainUs = Object.fromEntries(names.map((k) => [k, [] as number[]])) as Record<RunName, number[]>;
const processUs = Object.fromEntries(names.map((k) => [k, [] as number[]])) as Record<RunName, number[]>;
/** Each run's firings in the last round: the Kafka Streams peer must fire as many. */
const fired = Object.fromEntries(names.map((k) => [k, 0])) as Record<RunName, number>;
// Rounds in turn, each engine once a round: this box's load moves, and ratios are taken within the run.
const ROUNDS = Number(process.env.KAFKA_ROUNDS ?? 2);
const engineLoad: string[] = [];
for (let r = 0; r < ROUNDS; r++) {
  for (const name of names) {
    const spec = runs[name];
    log(`round ${r + 1}: dms engine, ${spec.label}`);
    const sink = new TimingSink();
    const result = await engineRun(spec.durable, sink, spec.feed, () => false);
    fired[name] = sink.triggered;
    rates[name].push(result.rate);
    healthzP99[name].push(pct(result.healthzMs, 99));
    mainUs[name].push(result.mainUs);
    processUs[name].push(result.processUs);
    log(`  ${fmt(result.rate)} obs/s; load ${loadAverage()}`);
  }
  engineLoad.push(loadAverage());
}
const rate = (name: RunName): number => median(rates[name]);
const durableRatio = rate("durableKafka") / rate("durableInProcess");
const memoryRatio = rate("memoryKafka") / rate("memoryInProcess");
const healthzMax = Math.max(...healthzP99.durableKafka, ...healthzP99.memoryKafka);
log(`durable through Kafka / durable in process: ${durableRatio.toFixed(2)}; in memory: ${memoryRatio.toFixed(2)}`);
if (process.env.KAFKA_ONLY === "engine") {
  await producer.disconnect();
  process.exit(0);
}

// The Kafka Streams peer on the same topic, right after dms (KAFKA_STREAMS=0: not run).
const streams = [];
for (const run of process.env.KAFKA_STREAMS === "0" ? [] : STREAMS_RUNS) {
  log(`Kafka Streams, ${run.store} store, ${run.threads} stream thread(s)`);
  const r = await runStreams({ brokers, topic, observations: N, rules: w.rules, things: w.things, ...run });
  log(`  ${"skipped" in r ? r.skipped : `${fmt(r.observations / r.seconds)} obs/s, ${fmt(r.triggered)} firings`}`);
  streams.push(r);
}
const streamsDms = {
  memory: { rate: rate("memoryKafka"), triggered: fired.memoryKafka },
  durable: { rate: rate("durableKafka"), triggered: fired.durableKafka },
};

// ---- latency at a steady rate ----
async function latency(rate: number, seconds: number): Promise<{ ms: number[]; healthzP99: number }> {
  const latencyTopic = `bench-latency-${run}-${rate}`;
  await createTopic(brokers, latencyTopic, PARTITIONS);
  const sink = new TimingSink();
  const total = rate * seconds;
  log(`latency: ${fmt(rate)} obs/s for ${seconds} s`);
  let ready!: () => void;
  const joined = new Promise<void>((r) => (ready = r));
  const consuming = engineRun(
    true,
    sink,
    { kind: "kafka", topic: latencyTopic, fetchThread: true },
    () => sink.latencies.length >= total,
    ready,
  );
  await joined;
  await new Promise((r) => setTimeout(r, 1000)); // the first fetches are on their way
  const tick = 10; // ms
  const perTick = Math.max(1, (rate * tick) / 1000);
  const start = performance.now();
  for (let sent = 0; sent < total;) {
    const messages = [];
    for (let i = 0; i < perTick; i++, sent++) {
      messages.push({
        key: "latency",
        value: JSON.stringify({ thingName: "latency", timestamp: Date.now(), state: { probe: sent } }),
      });
    }
    void producer.send({ topic: latencyTopic, messages });
    const due = start + (sent / rate) * 1000;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  }
  const ran = await Promise.race([consuming, new Promise<undefined>((r) => setTimeout(() => r(undefined), 30_000))]);
  // A copy: after the 30 s time-out the consumer may still be appending to sink.latencies.
  const ms = [...sink.latencies].sort((a, b) => a - b);
  return { ms, healthzP99: ran === undefined ? NaN : pct(ran.healthzMs, 99) };
}
const startLoad = loadAverage();
const latencies = [LATENCY_RATE, MID_RATE, LOW_RATE];
const probes = [];
for (const r of latencies) probes.push(await latency(r, LATENCY_SECONDS));
const [lat, mid, slow] = probes.map((p) => p.ms) as [number[], number[], number[]];
await producer.disconnect();

const vsRaw = (r: number): string => (r / kafkajsRate).toFixed(2);
// More runnable threads than twice the cores: rates and latencies then measure the box's scheduler more than dms.
const overloaded = Math.max(...[...engineLoad, startLoad].map((l) => Number(l.split(",")[0]))) > 2 * cpus().length;
const verdict = (ok: boolean, figure: string): string =>
  `${ok ? "yes" : "no"} (${figure})${overloaded ? "; not conclusive, the box was overloaded (load average above)" : ""}`;
const rows = [
  ["raw kafkajs consumer (no-op eachBatch)", fmt(kafkajsRate), "1.00", "", "", "", ""],
  ["raw @platformatic/kafka consumer (no-op)", fmt(platformaticRate), vsRaw(platformaticRate), "", "", "", ""],
  ...names.map((name) => {
    const own = name.startsWith("durable") ? "durableInProcess" : "memoryInProcess";
    return [
      `dms engine, ${runs[name].label}`,
      fmt(rate(name)),
      vsRaw(rate(name)),
      (rate(name) / rate(own)).toFixed(2),
      fmt(Math.max(...healthzP99[name]), 1),
      fmt(median(mainUs[name]), 2),
      fmt(median(processUs[name]), 2),
    ];
  }),
];
const body = [
  header("bench/kafka: end to end through the real broker", `npx tsx bench/kafka/index.ts ${N}`),
  `Load average after each round of engines: ${engineLoad.join("; ")}; at the start of the latency runs: ${startLoad}. Charts: [latency by rate](charts/kafka-latency.svg), [ratios](charts/ratios.svg).`,
  "",
  `${fmt(N)} observations produced ahead to a ${PARTITIONS}-partition topic on the single-node broker of scripts/kafka.sh; each consumer reads the whole topic in its own group. Workload: bench/engine's generator (${fmt(w.things.length)} things, ${fmt(w.rules.length)} rules). The in-process engines are fed the same messages, read from the topic once before, in the same chunks (${fmt(CHUNK)}, ${CHUNKS_IN_FLIGHT} in flight) through the same decode and engine, with no broker: "vs in process" is the engine through Kafka over the same engine without it, the figure the Kafka path is judged by. Each engine ran ${ROUNDS} times, in turn; the median. "/healthz p99": a node:http /healthz on the engine's thread, asked every 10 ms from a thread of its own while the engine ran at the maximum feed (the worst round). Durable: SQLite observation store (its writer thread) and state (checkpoints), as the service runs them. Latency: ${fmt(LATENCY_RATE)} (then ${fmt(MID_RATE)}, then ${fmt(LOW_RATE)}) observations/s for ${LATENCY_SECONDS} s, each triggering a rule; from the timestamp set just before produce to the action handed to the sink (durable engine, through Kafka).`,
  "",
  table(
    [
      "consumer",
      "observations/s",
      "vs raw kafkajs",
      "vs in process",
      "/healthz p99 (ms)",
      "engine's thread CPU µs/obs",
      "process CPU µs/obs",
    ],
    rows,
  ),
  "",
  table(
    ["latency produce -> action handed to the sink (ms)", ...latencies.map((r) => `at ${fmt(r)}/s`)],
    [
      ["samples", ...[lat, mid, slow].map((l) => fmt(l.length))],
      ...[50, 90, 99, 99.9].map((p) => [`p${p}`, ...[lat, mid, slow].map((l) => fmt(pct(l, p)))]),
      ["max", ...[lat, mid, slow].map((l) => fmt(l[l.length - 1] ?? NaN))],
      ["/healthz p99 meanwhile", ...probes.map((p) => fmt(p.healthzP99, 1))],
    ],
  ),
  "",
  table(
    ["target", "reached"],
    [
      [
        "durable engine through Kafka >= 0.8 of the same engine in process",
        verdict(durableRatio >= 0.8, durableRatio.toFixed(2)),
      ],
      ["/healthz p99 <= 50 ms at the maximum feed", verdict(healthzMax <= 50, `${fmt(healthzMax, 1)} ms`)],
      [`p99 <= 25 ms at ${fmt(LATENCY_RATE)}/s`, verdict(pct(lat, 99) <= 25, `${fmt(pct(lat, 99))} ms`)],
    ],
  ),
  ...(streams.length > 0 ? ["", streamsSection(streams, streamsDms, N)] : []),
].join("\n");
console.log(body);
writeSection("kafka", body);
recordFigures("kafka", {
  date: new Date().toISOString(),
  load: startLoad,
  rawKafkajsRate: kafkajsRate,
  rawPlatformaticRate: platformaticRate,
  engineRate: rate("memoryKafka"),
  durableRate: rate("durableKafka"),
  inProcessRate: rate("memoryInProcess"),
  durableInProcessRate: rate("durableInProcess"),
  streams: streams.flatMap((r) =>
    "skipped" in r
      ? []
      : [{ store: r.store, threads: r.threads, rate: r.observations / r.seconds, dmsRate: streamsDms[r.store].rate }],
  ),
  latency: (
    [
      [LATENCY_RATE, lat],
      [MID_RATE, mid],
      [LOW_RATE, slow],
    ] as const
  ).map(([rate, l]) => ({
    rate,
    samples: l.length,
    p50: pct(l, 50),
    p90: pct(l, 90),
    p99: pct(l, 99),
    p999: pct(l, 99.9),
    max: l[l.length - 1] ?? NaN,
  })),
});
process.exit(0);
