import { loadConfig } from "../../src/config/index.js";
/**
 * End to end through the real broker (bench/kafka).
 * `npx tsx bench/kafka/index.ts [observations]` (default 300,000; the 1,000,000 scaled to run in minutes here).
 * `KAFKA_ONLY=durable` runs only the in-memory and durable engines, in alternating rounds (`KAFKA_ROUNDS`, 2), and writes nothing.
 */
import { Consumer as PlatformaticConsumer } from "@platformatic/kafka";
import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { Kafka, logLevel } from "kafkajs";
import type { ActionSink, TriggeredAction } from "../../src/actions/index.js";
import {
  SqliteDeadLetterStore,
  decodeMessages,
  KafkaObservationSource,
  MemoryStateStore,
  RuleEngine,
  SqliteStateStore,
} from "../../src/engine/index.js";
import { migrations } from "../../src/migrations.js";
import { openObservations } from "../../src/observations/index.js";
import type { Rule } from "../../src/rules/index.js";
import { openDatabase, startCheckpointer } from "../../src/store/index.js";
import { createTopic, startKafka } from "../../test/support/kafka.js";
import { recordFigures } from "../charts.js";
import { fmt, header, loadAverage, table, writeSection } from "../engine/report.js";
import { perObservation, processCpuSeconds, ThreadCpu } from "../engine/threads.js";
import { thingResolver, workload, WORKLOAD_EPOCH_MS } from "../engine/workload.js";

/** The engine as the service runs it, by default (`DMS_ENGINE_*` in the environment change it, as for the service). */
const service = loadConfig(process.env);

const N = Number(process.argv[2] ?? 300_000);
const BROKER_PID_FILE = `/tmp/dms-kafka-${process.env.KAFKA_PORT ?? 9092}/kafka.pid`;
const PARTITIONS = 6;
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
  async accept(actions: readonly TriggeredAction[]): Promise<void> {
    const now = Date.now();
    for (const a of actions) if (a.ruleId === "latency") this.latencies.push(now - a.payload.observation.timestamp);
  }
}

async function engineRun(
  durable: boolean,
  sink: ActionSink,
  consumeTopic: string,
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
  const source = new KafkaObservationSource({
    brokers: brokers.split(","),
    topic: consumeTopic,
    groupId: `dms-${randomUUID()}`,
    checkpoint: () => engine.checkpoint(),
  });
  let threads0 = new Map<number, number>();
  let broker0 = 0;
  await source.start(async (batch) => {
    if (first === 0) {
      first = performance.now();
      // Threads started by now (kafkajs has none; module loaders of the writers) are told apart from the state writer, started later.
      threads.labelNew("other threads");
      threads0 = threads.snapshot();
      broker0 = processCpuSeconds(BROKER_PID);
    }
    const handled = await engine.handle(decodeMessages(batch));
    seen += batch.length;
    last = performance.now();
    // As the service: offsets committed once a checkpoint covers them.
    return handled;
  });
  await source.ready;
  onReady();
  while (!until() && !(consumeTopic === topic && seen >= N)) await new Promise((r) => setTimeout(r, 20));
  // The state of every observation counted is durable in the time measured: a last checkpoint.
  if (durable && seen >= N) {
    await engine.checkpoint();
    last = performance.now();
  }
  threads.labelNew("state writer");
  const cpu = new Map<string, number>();
  threads.add(threads0, threads.snapshot(), cpu);
  cpu.set("Kafka broker (JVM)", processCpuSeconds(BROKER_PID) - broker0);
  log(`  ${durable ? "durable" : "in memory"}: ${perObservation(cpu, seen)}`);
  await source.stop();
  await observations?.close();
  if (state instanceof SqliteStateStore) await state.close();
  await checkpointer.stop();
  db.close();
  rmSync(dir, { recursive: true, force: true });
  return { rate: seen / ((last - first) / 1000) };
}

log("raw kafkajs consumer");
const kafkajsRate = await rawKafkajs();
log(`  ${fmt(kafkajsRate)} obs/s`);
log("raw @platformatic/kafka consumer");
const platformaticRate = await rawPlatformatic().catch((err: unknown) => {
  log(`  failed: ${String(err)}`);
  return NaN;
});
log(`  ${fmt(platformaticRate)} obs/s`);
if (process.env.KAFKA_ONLY === "durable") {
  // The durable engine as the service runs it, and with its state written the other way
  // (service.DMS_ENGINE_STATE_THREAD), against the in-memory one in alternating rounds: this box's load moves,
  // and the table's runs are one after the other.
  const other = service.DMS_ENGINE_STATE_THREAD
    ? "state on the engine's thread"
    : "state written by a thread of its own";
  const rounds = Number(process.env.KAFKA_ROUNDS ?? 2);
  const sum = { memory: 0, durable: 0, other: 0 };
  for (let r = 0; r < rounds; r++) {
    const run = (durable: boolean, stateThread = service.DMS_ENGINE_STATE_THREAD) =>
      engineRun(
        durable,
        new TimingSink(),
        topic,
        () => false,
        () => {},
        stateThread,
      );
    const memory = (await run(false)).rate;
    const durable = (await run(true)).rate;
    const otherRate = (await run(true, !service.DMS_ENGINE_STATE_THREAD)).rate;
    log(
      `round ${r + 1}: in memory ${fmt(memory)}, durable ${fmt(durable)} (${(durable / memory).toFixed(2)}), ${other} ${fmt(otherRate)} (${(otherRate / memory).toFixed(2)}); load ${loadAverage()}`,
    );
    sum.memory += memory;
    sum.durable += durable;
    sum.other += otherRate;
  }
  console.log(
    `durable / in-memory engine over ${rounds} rounds: ${(sum.durable / sum.memory).toFixed(2)}; ${other}: ${(sum.other / sum.memory).toFixed(2)} (KAFKA_ONLY=durable npx tsx bench/kafka/index.ts ${N})`,
  );
  await producer.disconnect();
  process.exit(0);
}

log("dms engine, state in memory, no observation store");
const engineMem = await engineRun(false, new TimingSink(), topic, () => false);
log(`  ${fmt(engineMem.rate)} obs/s`);
log("dms engine, SQLite observation store and state");
const engineDurable = await engineRun(true, new TimingSink(), topic, () => false);
log(`  ${fmt(engineDurable.rate)} obs/s`);

// ---- latency at a steady rate ----
async function latency(rate: number, seconds: number): Promise<number[]> {
  const latencyTopic = `bench-latency-${run}-${rate}`;
  await createTopic(brokers, latencyTopic, PARTITIONS);
  const sink = new TimingSink();
  const total = rate * seconds;
  log(`latency: ${fmt(rate)} obs/s for ${seconds} s`);
  let ready!: () => void;
  const joined = new Promise<void>((r) => (ready = r));
  const consuming = engineRun(true, sink, latencyTopic, () => sink.latencies.length >= total, ready);
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
  await Promise.race([consuming, new Promise((r) => setTimeout(r, 30_000))]);
  // A copy: after the 30 s time-out the consumer may still be appending to sink.latencies.
  return [...sink.latencies].sort((a, b) => a - b);
}
const pct = (lat: number[], p: number): number =>
  lat[Math.min(lat.length - 1, Math.floor((p / 100) * lat.length))] ?? NaN;
const startLoad = loadAverage();
const lat = await latency(LATENCY_RATE, LATENCY_SECONDS);
const mid = await latency(MID_RATE, LATENCY_SECONDS);
const slow = await latency(LOW_RATE, LATENCY_SECONDS);
await producer.disconnect();

const rows = [
  ["raw kafkajs consumer (no-op eachBatch)", fmt(kafkajsRate), "1.00"],
  ["raw @platformatic/kafka consumer (no-op)", fmt(platformaticRate), (platformaticRate / kafkajsRate).toFixed(2)],
  [
    "dms engine (kafkajs source), state in memory, no store",
    fmt(engineMem.rate),
    (engineMem.rate / kafkajsRate).toFixed(2),
  ],
  [
    "dms engine (kafkajs source), SQLite observation store + state",
    fmt(engineDurable.rate),
    (engineDurable.rate / kafkajsRate).toFixed(2),
  ],
];
const body = [
  header("bench/kafka: end to end through the real broker", `npx tsx bench/kafka/index.ts ${N}`),
  `Load average at the start of the latency runs: ${startLoad}. Charts: [latency by rate](charts/kafka-latency.svg), [ratios](charts/ratios.svg).`,
  "",
  `${fmt(N)} observations (the issue's 1,000,000 scaled down to run in minutes on this shared 2-core machine) produced ahead to a ${PARTITIONS}-partition topic on the single-node broker of scripts/kafka.sh; each consumer reads the whole topic in its own group. Workload: bench/engine's generator (${fmt(w.things.length)} things, ${fmt(w.rules.length)} rules). Latency: ${fmt(LATENCY_RATE)} (then ${fmt(MID_RATE)}, then ${fmt(LOW_RATE)}) observations/s for ${LATENCY_SECONDS} s, each triggering a rule; from the timestamp set just before produce to the action handed to the sink (durable engine).`,
  "",
  table(["consumer", "observations/s", "vs raw kafkajs"], rows),
  "",
  table(
    [
      "latency produce -> action handed to the sink (ms)",
      ...[LATENCY_RATE, MID_RATE, LOW_RATE].map((r) => `at ${fmt(r)}/s`),
    ],
    [
      ["samples", ...[lat, mid, slow].map((l) => fmt(l.length))],
      ...[50, 90, 99].map((p) => [`p${p}`, ...[lat, mid, slow].map((l) => fmt(pct(l, p)))]),
      ["max", ...[lat, mid, slow].map((l) => fmt(l[l.length - 1] ?? NaN))],
    ],
  ),
  "",
  table(
    ["target", "reached"],
    [
      [
        ">= 85 % of the raw consumer rate (durable engine)",
        engineDurable.rate / kafkajsRate >= 0.85
          ? "yes"
          : `no (${((100 * engineDurable.rate) / kafkajsRate).toFixed(0)} %)`,
      ],
      [
        ">= 85 % of the raw consumer rate (engine, no store)",
        engineMem.rate / kafkajsRate >= 0.85 ? "yes" : `no (${((100 * engineMem.rate) / kafkajsRate).toFixed(0)} %)`,
      ],
      [`p99 <= 25 ms at ${fmt(LATENCY_RATE)}/s`, pct(lat, 99) <= 25 ? "yes" : `no (${fmt(pct(lat, 99))} ms)`],
    ],
  ),
].join("\n");
console.log(body);
writeSection("kafka", body);
recordFigures("kafka", {
  date: new Date().toISOString(),
  load: startLoad,
  rawKafkajsRate: kafkajsRate,
  rawPlatformaticRate: platformaticRate,
  engineRate: engineMem.rate,
  durableRate: engineDurable.rate,
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
    max: l[l.length - 1] ?? NaN,
  })),
});
process.exit(0);
