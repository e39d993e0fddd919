/**
 * Engine state across nodes (bench/handover): the two ways for a partition's new owner to continue
 * its things' state, side by side in one run on the real PostgreSQL and the real broker. The same
 * things (bench/engine's names and resources, three live threshold entries each) go through each
 * path's checkpoints, written as the stores write them (`stateDoc`):
 *
 * - PostgreSQL: `PgStateStore.flush` (batched upserts of `unnest`ed arrays) into the state table as
 *   it is, and into one with an index on `last_source` (which holds the observation partition);
 *   a hand-over is `PgStateStore.reload` (every row, as today) or a read of the partitions taken.
 * - A compacted changelog topic keyed by thing name, partitioned as the observations topic
 *   (kafkajs, acks all): a hand-over reads the partitions taken from the beginning to their end
 *   offsets, before the log cleaner ran (every checkpoint's record) and after it compacted them.
 *
 * Steady state: checkpoints of `BENCH_HANDOVER_CHANGED` changed things each, back to back, the paths
 * taking turns; CPU is this process's (the engine's side) and the server's (the PostgreSQL backend,
 * the broker's JVM). Hand-overs are timed in rounds, the methods taking turns, and checked against
 * the states written.
 *
 * Rerun: npx tsx bench/handover/index.ts (BENCH_HANDOVER_THINGS=100000, BENCH_HANDOVER_CHANGED=10000,
 * BENCH_HANDOVER_FLUSHES=40, BENCH_HANDOVER_ROUNDS=5; KAFKA_PORT=9192 KAFKA_CONTROLLER_PORT=9193 for a
 * broker of its own, which scripts/kafka.sh stop then ends).
 */
import { randomUUID } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Kafka, logLevel, Partitioners } from "kafkajs";
import { loadConfig } from "../../src/config/index.js";
import type { ThingState } from "../../src/engine/index.js";
import { stateDoc } from "../../src/engine/state/doc.js";
import { startKafka } from "../../test/support/kafka.js";
import { fullGc } from "../gc.js";
import { fmt, header, loadAverage, table, writeSection } from "../engine/report.js";
import { processCpuSeconds } from "../engine/threads.js";
import { rng } from "../engine/workload.js";
import {
  CHANGELOG_COMPRESSION_NAME,
  RECORDS_PER_SEND,
  ChangelogWriter,
  compactNow,
  createChangelogTopic,
  restoreChangelog,
  segmentBytes,
  type Compaction,
} from "./changelog.js";
import { PgSide } from "./postgres.js";
import { fleet, observeAgain } from "./states.js";

const THINGS = Number(process.env.BENCH_HANDOVER_THINGS ?? 100_000);
const CHANGED = Number(process.env.BENCH_HANDOVER_CHANGED ?? 10_000);
const FLUSHES = Number(process.env.BENCH_HANDOVER_FLUSHES ?? 40);
const ROUNDS = Number(process.env.BENCH_HANDOVER_ROUNDS ?? 5);
/** The observations topic's partitions as the service creates it. */
const PARTITIONS = loadConfig(process.env).KAFKA_TOPIC_PARTITIONS;
/** A new owner takes one partition (one node of many leaves), half (a second node joins) or all (the last one left). */
const TAKES = [...new Set([1, Math.ceil(PARTITIONS / 2), PARTITIONS])];
const KAFKA_STATE_DIR = process.env.KAFKA_STATE_DIR ?? `/tmp/dms-kafka-${process.env.KAFKA_PORT ?? 9092}`;
const BROKER_PID_FILE = join(KAFKA_STATE_DIR, "kafka.pid");
const log = (...a: unknown[]): void => console.error(...a);

/** One timed piece of work: wall time, this process's CPU and the server's. */
interface Sample {
  wallMs: number;
  cpuMs: number;
  serverMs: number;
}

async function measured<T>(serverSeconds: () => number, work: () => Promise<T>): Promise<Sample & { value: T }> {
  const cpu0 = process.cpuUsage();
  const server0 = serverSeconds();
  const t0 = performance.now();
  const value = await work();
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  return { value, wallMs, cpuMs: (cpu.user + cpu.system) / 1000, serverMs: (serverSeconds() - server0) * 1000 };
}

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

// ---- set-up ----

const machineHeader = header(
  "Engine state across nodes: PostgreSQL per partition against a compacted changelog (bench/handover)",
  "npx tsx bench/handover/index.ts",
);
const loadAtStart = loadAverage();
const things = fleet(THINGS, PARTITIONS);
const perPartition = Array.from({ length: PARTITIONS }, (_, p) => things.partitionOf.filter((x) => x === p).length);
const brokers = await startKafka();
// Read once the broker is up: scripts/kafka.sh writes it when it starts one.
const brokerPid = existsSync(BROKER_PID_FILE) ? Number(readFileSync(BROKER_PID_FILE, "utf8").trim()) : 0;
const brokerCpuSeconds = (): number => (brokerPid > 0 ? processCpuSeconds(brokerPid) : 0);
const kafka = new Kafka({ clientId: "bench-handover", brokers: brokers.split(","), logLevel: logLevel.NOTHING });
const admin = kafka.admin();
await admin.connect();
const producer = kafka.producer({ allowAutoTopicCreation: false, createPartitioner: Partitioners.DefaultPartitioner });
await producer.connect();
const topic = `bench-handover-state-${randomUUID().slice(0, 8)}`;
await createChangelogTopic(admin, topic, PARTITIONS);
const pgPlain = await PgSide.open(false);
const pgIndexed = await PgSide.open(true);
const changelog = new ChangelogWriter(producer, topic);

/** A checkpoint path: one flush of the changed states, durable when it resolves. */
interface Path {
  name: string;
  flush(changed: readonly ThingState[]): Promise<void>;
  serverSeconds(): number;
}
const paths: Path[] = [
  {
    name: "PostgreSQL, state table as it is (`PgStateStore.flush`)",
    flush: async (c) => {
      await pgPlain.writer.flush(c);
    },
    serverSeconds: () => pgPlain.serverCpuSeconds(),
  },
  {
    name: "PostgreSQL, with an index on `last_source`",
    flush: async (c) => {
      await pgIndexed.writer.flush(c);
    },
    serverSeconds: () => pgIndexed.serverCpuSeconds(),
  },
  {
    name: `changelog topic (acks all, compression ${CHANGELOG_COMPRESSION_NAME})`,
    flush: (c) => changelog.flush(c),
    serverSeconds: brokerCpuSeconds,
  },
];

/** A new owner's way to the state of the partitions it takes. */
interface Method {
  name: string;
  /** Reads every partition's things whatever it takes. */
  readsAll?: boolean;
  serverSeconds(): number;
  run(partitions: readonly number[]): Promise<Taken>;
}
interface Taken {
  size: number;
  records: number;
  joinMs?: number;
  thing(name: string): ThingState | undefined;
  close?(): Promise<void>;
}

const pgMethods: Method[] = [
  {
    name: "PostgreSQL: every row (`PgStateStore.reload`, as today)",
    readsAll: true,
    serverSeconds: () => pgPlain.serverCpuSeconds(),
    run: async () => {
      await pgPlain.reader.reload();
      return { size: THINGS, records: THINGS, thing: (n) => pgPlain.reader.thing(n) };
    },
  },
  {
    name: "PostgreSQL: rows of the partitions taken, no index (`last_source = ANY`)",
    serverSeconds: () => pgPlain.serverCpuSeconds(),
    run: async (partitions) => {
      const states = await pgPlain.readPartitions(partitions);
      return { size: states.size, records: states.size, thing: (n) => states.get(n) };
    },
  },
  {
    name: "PostgreSQL: rows of the partitions taken, index on `last_source`",
    serverSeconds: () => pgIndexed.serverCpuSeconds(),
    run: async (partitions) => {
      const states = await pgIndexed.readPartitions(partitions);
      return { size: states.size, records: states.size, thing: (n) => states.get(n) };
    },
  },
];
const changelogMethod = (name: string): Method => ({
  name,
  serverSeconds: brokerCpuSeconds,
  run: async (partitions) => {
    const r = await restoreChangelog(kafka, admin, topic, partitions);
    return { size: r.states.size, records: r.records, joinMs: r.joinMs, thing: (n) => r.states.get(n), close: r.close };
  },
});

/** The states the partitions taken hold, which a method must have read back exactly. */
function check(method: Method, partitions: readonly number[], taken: Taken): void {
  const wanted = things.states.filter((_, i) => partitions.includes(things.partitionOf[i]!));
  if (!method.readsAll && taken.size !== wanted.length)
    throw new Error(`${method.name}: ${taken.size} things for partitions ${partitions}, wanted ${wanted.length}`);
  for (const t of wanted) {
    const got = taken.thing(t.thingName);
    if (
      got === undefined ||
      stateDoc(got) !== stateDoc(t) ||
      got.timestamp !== t.timestamp ||
      got.seq !== t.seq ||
      got.lastSource !== t.lastSource ||
      got.lastOffset !== t.lastOffset
    )
      throw new Error(`${method.name}: ${t.thingName} does not read back as written`);
  }
}

interface HandoverRow {
  take: number;
  method: string;
  samples: (Sample & { records: number; size: number; joinMs?: number })[];
}
const handovers: HandoverRow[] = [];

async function handoverRounds(methods: readonly Method[]): Promise<void> {
  for (let round = 0; round < ROUNDS; round++)
    for (const [ti, take] of TAKES.entries()) {
      const partitions = Array.from({ length: take }, (_, p) => p);
      for (let k = 0; k < methods.length; k++) {
        const method = methods[(k + round + ti) % methods.length]!;
        // What the method before left on the heap (a restore's states) is not collected inside this one's timing.
        fullGc();
        const s = await measured(
          () => method.serverSeconds(),
          () => method.run(partitions),
        );
        if (round === 0) check(method, partitions, s.value);
        await s.value.close?.();
        let row = handovers.find((h) => h.take === take && h.method === method.name);
        if (row === undefined) handovers.push((row = { take, method: method.name, samples: [] }));
        // Figures only: a sample holding the states read would keep every restore's states alive.
        row.samples.push({
          wallMs: s.wallMs,
          cpuMs: s.cpuMs,
          serverMs: s.serverMs,
          records: s.value.records,
          size: s.value.size,
          joinMs: s.value.joinMs,
        });
        log(`round ${round} takes ${take}: ${method.name} ${s.wallMs.toFixed(0)} ms`);
      }
    }
}

let compaction: Compaction | undefined;
const loads: string[] = [];
const flushSamples = new Map<string, Sample[]>(paths.map((p) => [p.name, []]));
let populateMs: number | undefined;
let plans: string[] | undefined;
let tableBytes: number[] | undefined;
let segmentsUncompacted: number[] | undefined;

try {
  // ---- every thing written once, as the first checkpoints after a start ----
  log(`writing ${fmt(THINGS)} things to each path`);
  const t0 = performance.now();
  for (let from = 0; from < THINGS; from += CHANGED) {
    const slice = things.states.slice(from, from + CHANGED);
    for (const path of paths) await path.flush(slice);
  }
  populateMs = performance.now() - t0;

  // ---- steady state: checkpoints of CHANGED changed things ----
  const r = rng(7);
  const order = Array.from({ length: THINGS }, (_, i) => i);
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  for (let f = 0; f < FLUSHES; f++) {
    const changed: ThingState[] = [];
    for (let k = 0; k < CHANGED; k++) changed.push(things.states[order[(f * CHANGED + k) % THINGS]!]!);
    observeAgain(changed, r);
    for (let k = 0; k < paths.length; k++) {
      const path = paths[(k + f) % paths.length]!;
      const s = await measured(
        () => path.serverSeconds(),
        () => path.flush(changed),
      );
      flushSamples.get(path.name)!.push(s);
    }
    if (f % 10 === 9) log(`checkpoint ${f + 1} of ${FLUSHES}`);
  }
  loads.push(`checkpoints: ${loadAverage()}`);
  await pgPlain.analyze();
  await pgIndexed.analyze();
  plans = await Promise.all(TAKES.map((take) => pgIndexed.plan(Array.from({ length: take }, (_, p) => p))));
  tableBytes = [await pgPlain.tableBytes(), await pgIndexed.tableBytes()];
  segmentsUncompacted = segmentBytes(join(KAFKA_STATE_DIR, "data"), topic, PARTITIONS);

  // ---- hand-overs: the changelog before the log cleaner ran ----
  await handoverRounds([...pgMethods, changelogMethod("changelog, not compacted: every checkpoint's record")]);
  loads.push(`hand-overs before compaction: ${loadAverage()}`);

  // ---- hand-overs: the changelog compacted ----
  const rollWith = Array.from({ length: PARTITIONS }, (_, p) => things.states[things.partitionOf.indexOf(p)]!).filter(
    (t) => t !== undefined,
  );
  log("compacting the changelog");
  compaction = await compactNow(admin, producer, topic, rollWith, join(KAFKA_STATE_DIR, "data"), PARTITIONS);
  log(`compaction ${compaction.observed ? "seen" : "not seen"} after ${compaction.seconds.toFixed(0)} s`);
  await handoverRounds([...pgMethods, changelogMethod("changelog, compacted by the log cleaner")]);
  loads.push(`hand-overs after compaction: ${loadAverage()}`);
} finally {
  // Each step whatever the others did: the databases are dropped even when the broker went away.
  await pgPlain.drop().catch(() => undefined);
  await pgIndexed.drop().catch(() => undefined);
  await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
  await producer.disconnect().catch(() => undefined);
  await admin.disconnect().catch(() => undefined);
}

// ---- report ----

const writesPerThing = 1 + (FLUSHES * CHANGED) / THINGS;
const per1000 = (ms: number, writes: number): string => fmt((1000 * ms) / writes, 1);
const steadyRows = paths.map((p) => {
  const s = flushSamples.get(p.name)!;
  const writes = s.length * CHANGED;
  const sum = (f: (x: Sample) => number): number => s.reduce((a, x) => a + f(x), 0);
  return [
    p.name,
    fmt(median(s.map((x) => x.wallMs))),
    per1000(
      sum((x) => x.wallMs),
      writes,
    ),
    per1000(
      sum((x) => x.cpuMs),
      writes,
    ),
    per1000(
      sum((x) => x.serverMs),
      writes,
    ),
  ];
});
// The methods in the order first timed (round 0 runs them as listed).
const methodNames = [...new Set(handovers.map((h) => h.method))];
const methodOrder = (name: string): number => methodNames.indexOf(name);
const handoverRows = [...handovers]
  .sort((a, b) => a.take - b.take || methodOrder(a.method) - methodOrder(b.method))
  .map((h) => {
    const walls = h.samples.map((x) => x.wallMs);
    const joins = h.samples.flatMap((x) => (x.joinMs === undefined ? [] : [x.joinMs]));
    return [
      `${h.take} of ${PARTITIONS}`,
      fmt(h.samples[0]!.size),
      h.method,
      `${fmt(median(walls))} (${fmt(walls.reduce((a, b) => Math.min(a, b)))}-${fmt(walls.reduce((a, b) => Math.max(a, b)))})`,
      fmt(median(h.samples.map((x) => x.cpuMs))),
      fmt(median(h.samples.map((x) => x.serverMs))),
      fmt(median(h.samples.map((x) => x.records))),
      joins.length ? fmt(median(joins)) : "",
    ];
  });
const mib = (b: number): string => fmt(b / 2 ** 20, 1);
const sumOf = (xs: readonly number[] | undefined): number | undefined => xs?.reduce((a, b) => a + b, 0);
const compactionLine = compaction?.observed
  ? `the log cleaner compacted the changelog ${fmt(compaction.seconds)} s after it was allowed to (segment.ms 100, min.cleanable.dirty.ratio 0.01, set for the bench): segments ${mib(sumOf(compaction.before)!)} MiB before, ${mib(sumOf(compaction.after)!)} MiB after`
  : `the changelog's compaction was not seen within ${fmt(compaction?.seconds ?? 0)} s (its log directory ${KAFKA_STATE_DIR}/data is not on this machine, or the cleaner had not finished): see the records read`;

const body = [
  machineHeader,
  `- load average (1, 5, 15 min): ${loadAtStart} at the start; ${loads.join("; ")} (the machine is shared)`,
  `- ${fmt(THINGS)} things on ${PARTITIONS} partitions (${perPartition.join(", ")} a partition, kafkajs's default partitioner on the name), each with five resources and three live threshold entries; a state document of ${fmt(
    things.states.reduce((a, t) => a + stateDoc(t).length, 0) / THINGS,
  )} bytes on average`,
  `- every thing written once (${fmt((populateMs ?? 0) / 1000, 1)} s for the three paths), then ${FLUSHES} checkpoints of ${fmt(CHANGED)} changed things, back to back, the paths taking turns: ${fmt(writesPerThing, 1)} writes a thing`,
  `- sizes: BENCH_HANDOVER_THINGS=${THINGS} BENCH_HANDOVER_CHANGED=${CHANGED} BENCH_HANDOVER_FLUSHES=${FLUSHES} BENCH_HANDOVER_ROUNDS=${ROUNDS}`,
  `- PostgreSQL 15 on this machine: a commit waits for its WAL's fsync (synchronous_commit on). The broker of scripts/kafka.sh on this machine (${brokers}): acks all waits for the in-sync replicas' append, not for a disk (Kafka's durability is its replicas; here one); ${brokerPid > 0 ? "its CPU counts whatever else it served" : `its CPU not read (no pid file in ${KAFKA_STATE_DIR})`} (KAFKA_PORT and KAFKA_CONTROLLER_PORT give the bench a broker of its own)`,
  `- changelog records: key the thing's name, value the row's columns and the state document; compression ${CHANGELOG_COMPRESSION_NAME} (kafkajs ships only gzip; lz4 needs a codec package); a checkpoint as produce requests of ${fmt(RECORDS_PER_SEND)} records in flight together`,
  "- hand-overs: a full GC before each; the changelog's includes asking the end offsets and joining a consumer group of its own (kafkajs cannot assign partitions without one); every method's states checked against those written in the first round",
  `- ${compactionLine}`,
  `- plans for the indexed partition read, taking ${TAKES.join(" / ")} partitions: ${(plans ?? []).join(" / ")}`,
  `- durable bytes: state table ${mib(tableBytes?.[0] ?? 0)} MiB as it is, ${mib(tableBytes?.[1] ?? 0)} MiB with the index; changelog records produced ${mib(changelog.bytes)} MiB (keys and values), segments before compaction ${segmentsUncompacted ? `${mib(sumOf(segmentsUncompacted)!)} MiB` : "not readable"}`,
  "",
  "### Steady state: a checkpoint's writes",
  "",
  table(
    [
      "checkpoint path",
      `wall ms a checkpoint of ${fmt(CHANGED)} (median)`,
      "wall ms / 1,000 writes",
      "dms CPU ms / 1,000 writes",
      "server CPU ms / 1,000 writes",
    ],
    steadyRows,
  ),
  "",
  "A thing is written at most once a checkpoint however often it was observed, so the cost an observation is at most that of a write.",
  "",
  `### Hand-over: the new owner has the state of the partitions it takes (median of ${ROUNDS} rounds, min-max)`,
  "",
  table(
    [
      "new owner takes",
      "things",
      "method",
      "wall ms",
      "dms CPU ms",
      "server CPU ms",
      "records read",
      "of which group join ms",
    ],
    handoverRows,
  ),
  "",
  "PostgreSQL rows are from both hand-over phases (before and after the changelog's compaction).",
].join("\n");
console.log(body);
writeSection("handover", body);
