/**
 * bench/kafka's Kafka Streams peer (Apache-2.0, a benchmark peer only, never shipped): the bench's
 * rules as a Streams application (Processor API, one key-value store keyed by thing) reading the
 * bench's pre-loaded topic in a child JVM. `runStreams` builds the Maven project beside this file once
 * (bench/maven.ts), writes the rules (rules.ts) to a temp file and returns the figures the JVM prints;
 * `streamsSection` sets them beside dms's runs on the same topic.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Rule } from "../../../src/rules/index.js";
import { fmt, loadAverage, table } from "../../engine/report.js";
import { buildPeer, tail, type PeerSkipped } from "../../maven.js";
import { streamsSpec } from "./rules.js";

const HERE = dirname(fileURLToPath(import.meta.url));
const CACHE = process.env.STREAMS_PEER_CACHE_DIR ?? join(homedir(), ".cache/dms-streams-peer");
export const STREAMS_VERSION =
  /<artifactId>kafka-streams<\/artifactId>\s*<version>([^<]+)</.exec(
    readFileSync(join(HERE, "pom.xml"), "utf8"),
  )?.[1] ?? "?";

export type StreamsStore = "memory" | "durable";

/** The pairs the bench runs: each store with 1 and 2 stream threads. */
export const STREAMS_RUNS: readonly { store: StreamsStore; threads: number }[] = [
  { store: "memory", threads: 1 },
  { store: "memory", threads: 2 },
  { store: "durable", threads: 1 },
  { store: "durable", threads: 2 },
];

export interface StreamsResult {
  store: StreamsStore;
  threads: number;
  observations: number;
  unknown: number;
  seconds: number;
  /** CPU time of the whole JVM (stream threads, clients, RocksDB, GC) from the application's start to the end. */
  cpuSeconds: number;
  triggered: number;
  java: string;
  /** `uptime`'s load averages as the run started: the box is shared. */
  load: string;
}

export interface StreamsInput {
  brokers: string;
  topic: string;
  /** The observations on the topic: the run ends when all are processed (memory) or committed (durable). */
  observations: number;
  rules: readonly Rule[];
  things: readonly { thingName: string; thingType: string }[];
  store: StreamsStore;
  threads: number;
}

export async function runStreams(input: StreamsInput): Promise<StreamsResult | PeerSkipped> {
  const built = buildPeer({
    pom: join(HERE, "pom.xml"),
    sources: [join(HERE, "src/main/java/dms/streams"), join(HERE, "../../engine/peer/src/main/java/dms/peer")],
    cache: CACHE,
  });
  if ("skipped" in built) return built;
  const load = loadAverage();
  const dir = mkdtempSync(join(tmpdir(), "dms-streams-peer-"));
  try {
    const specFile = join(dir, "spec.json");
    writeFileSync(specFile, JSON.stringify(streamsSpec(input.rules, input.things)));
    const args = [input.brokers, input.topic, String(input.observations), input.store, String(input.threads)];
    const child = spawn(
      "java",
      [
        "-Xms1g",
        "-Xmx1g",
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
        "-cp",
        built.classpath,
        "dms.streams.StreamsPeer",
        specFile,
        ...args,
        join(dir, "state"),
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    return await new Promise((resolve) => {
      child.on("error", (e) => resolve({ skipped: `java: ${e.message}` }));
      child.on("close", (code) => {
        const line = out.trim().split("\n").pop() ?? "";
        if (code !== 0 || !line.startsWith("{")) {
          resolve({ skipped: `the Streams JVM exited ${code}: ${tail(err || out)}` });
          return;
        }
        const figures = JSON.parse(line) as Omit<StreamsResult, "store" | "threads" | "load">;
        resolve({ ...figures, store: input.store, threads: input.threads, load });
      });
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** dms's run on the same topic that a Streams run is set against. */
export interface DmsRun {
  rate: number;
  triggered: number;
}

/** bench/kafka's sub-table: each Streams run against dms with the same durability. */
export function streamsSection(
  runs: readonly (StreamsResult | PeerSkipped)[],
  dms: Record<StreamsStore, DmsRun>,
  observations: number,
): string {
  const lines = ["### Side by side with Kafka Streams", ""];
  const done = runs.filter((r): r is StreamsResult => !("skipped" in r));
  const skipped = runs.find((r): r is PeerSkipped => "skipped" in r);
  if (skipped) lines.push(`A Streams run did not complete: ${"`"}${skipped.skipped.replace(/`/g, "'")}${"`"}`, "");
  if (done.length === 0) return lines.join("\n");
  const java = done[0]!.java;
  lines.push(
    `The same ${fmt(observations)} observations on the same topic, read from the beginning by a Kafka Streams ${STREAMS_VERSION} application (the broker's version; \`bench/kafka/streams/\`, built by Maven; Java ${java}, \`-Xmx1g\`) in a fresh group each run: one source, one processor (Processor API) and one key-value store keyed by thing holding its merged state and the run of consecutive matches of each rule of its type, one get and one put per observation; at-least-once, commit interval 5 s (dms's checkpoint interval), a 64 MiB record cache. Durable: RocksDB with its changelog topic, timed from the first record processed to every offset committed (a commit flushes the store and the changelog first); in memory: the in-memory store without a changelog, timed to the last record processed, as dms's in-memory engine.`,
    "",
    table(
      [
        "Kafka Streams run",
        "stream threads",
        "load at its start",
        "observations/s",
        "JVM CPU s (from start)",
        "firings",
        "dms (same durability)",
        "dms firings",
        "dms / Streams",
      ],
      done.map((r) => {
        const rate = r.observations / r.seconds;
        const d = dms[r.store];
        return [
          r.store === "durable" ? "RocksDB + changelog" : "in-memory store",
          r.threads,
          r.load,
          fmt(rate),
          r.cpuSeconds.toFixed(1),
          fmt(r.triggered),
          fmt(d.rate),
          d.triggered === r.triggered ? `${fmt(d.triggered)} (equal)` : `${fmt(d.triggered)} (DIFFER)`,
          `${(d.rate / rate).toFixed(2)}x`,
        ];
      }),
    ),
    "",
    STREAMS_NOTES,
  );
  return lines.join("\n");
}

/** What each side computes that the other does not. */
export const STREAMS_NOTES = [
  "What each side computes that the other does not:",
  "",
  "| | dms engine | Kafka Streams application here |",
  "| --- | --- | --- |",
  "| rules | loaded from the rule store, changed at run time; constants indexed per resource, geofences in a grid, so an observation meets only the rules it can match | compiled into the application from a spec file; every rule of the thing's type evaluated for every observation; a rule change is a redeploy |",
  "| state | merged thing state and threshold counts, checkpointed to SQLite (durable) every 5 s and at the end | the same per thing in one store record; RocksDB + changelog topic (durable), committed every 5 s and at the end |",
  "| observations | every accepted observation stored in dms's observation store (durable run), queryable by FIND and exports | not stored: Streams keeps only the state |",
  "| actions | actions built per firing (message templates, idempotency keys) and handed to the sink | firings counted, no action built or forwarded |",
  "| thing registry | types, domains and resource type checks from the registry | a name-to-type map in the spec |",
  "| dead letters | undecodable observations to a dead-letter store | counted and dropped |",
  "| scaling out | one consumer per node; partitions move with the group | stream threads and instances share the topic's partitions; state restored from the changelog on a move |",
].join("\n");
