import { loadConfig } from "../../src/config/index.js";
/**
 * In-process throughput of decode + evaluate + state update (bench/engine).
 * `npx tsx bench/engine/index.ts [observations]` (default 2,000,000).
 * `ENGINE_ONLY=durable` runs the durable engine against the in-memory one and nothing else (no
 * RESULTS section written): the figure that changes with the stores, in a minute.
 */
import { booleanPointInPolygon } from "@turf/boolean-point-in-polygon";
import { distance } from "@turf/distance";
import { polygon as turfPolygon } from "@turf/helpers";
import { Engine as JsonRulesEngine, type RuleProperties } from "json-rules-engine";
import { performance } from "node:perf_hooks";
import type { TriggeredAction } from "../../src/actions/index.js";
import {
  decodeMessages,
  MemoryStateStore,
  readGeoPoint,
  RuleEngine,
  type EngineOptions,
  type RawObservation,
  type ThingInfo,
} from "../../src/engine/index.js";
import type { ExpressionItem, Poi, Rule } from "../../src/rules/index.js";
import { recordFigures } from "../charts.js";
import { formulationsFromEnv, runFormulations } from "./peer/index.js";
import { bestCorrect, peerSection } from "./peer/report.js";
import { fmt, header, loadAverage, table, writeSection } from "./report.js";
import { RULES_PER_TYPE_SWEEP, sweepRules } from "./sweep.js";
import { runDurable, type DurableVariant } from "./durable.js";
import { perObservation } from "./threads.js";
import { Encoded, thingResolver, workload, WORKLOAD_EPOCH_MS, type Workload } from "./workload.js";

/** The engine as the service runs it, by default (`DMS_ENGINE_*` in the environment change it, as for the service). */
const service = loadConfig(process.env);

const N = Number(process.argv[2] ?? 2_000_000);
const CHUNK = 5_000;
const SAMPLE = Math.min(N, 200_000);
const MATHJS_SAMPLE = Math.min(N, 20_000);
const JRE_SAMPLE = 3_000;
/** The durable engine and the in-memory one: observations that warm both (untimed), then the measured ones. */
const DURABLE_WARM = Math.min(N, 200_000);
/**
 * All the rest: at these rates the service checkpoints every 5 s, once per 0.7-1 million
 * observations, so a shorter window that ends with its last checkpoint (every measured observation
 * durable within the time measured) would charge the state's rows several times as often as the
 * service pays them.
 */
const DURABLE_SAMPLE = Math.max(0, N - DURABLE_WARM);
// json-rules-engine is compared with the engine on the same sample, run right before it.
const RULES_PER_TYPE = 100;
/** The engine's rate by rules per type (10 to 1,000) on this many observations each. */
const SWEEP_SAMPLE = Math.min(N, Number(process.env.ENGINE_SWEEP_SAMPLE ?? 100_000));
/** The JVM CEP peer and dms on the first observations (0: no peer). 300,000 is 3 per thing: some trigger. */
const PEER_SAMPLE = Math.min(N, Number(process.env.ENGINE_PEER_SAMPLE ?? 300_000));

const log = (...a: unknown[]): void => console.error(...a);

function main(): Promise<void> {
  return run();
}

async function run(): Promise<void> {
  const startLoad = loadAverage();
  const w = workload();
  log(
    `workload: ${w.things.length} things, ${w.types.length} types, ${w.rules.length} rules; encoding ${fmt(N)} observations`,
  );
  if (process.env.ENGINE_ONLY === "durable") return durableOnly(startLoad);
  const data = new Encoded(w, N);
  const resolveThing = thingResolver(w.things);

  // (a) the ceiling (JSON.parse and nothing else) and the engine, interleaved chunk by chunk: this
  // machine is shared, and its load moves; interleaving puts both under the same load.
  let parsed = 0;
  const mainEngine = new RuleEngine({
    resolveThing,
    state: new MemoryStateStore(),
    sink: discard,
    clock: () => WORKLOAD_EPOCH_MS,
  });
  mainEngine.load(w.rules);
  const main = { rate: 0, seconds: 0, triggered: 0, matched: 0 };
  const decode = { seconds: 0 };
  for (let start = 0; start < N; start += CHUNK) {
    const chunk = data.chunk(start, Math.min(N, start + CHUNK));
    const t0 = performance.now();
    for (let i = 0; i < chunk.length; i++) {
      const o = JSON.parse((chunk[i]!.value as Buffer).toString("utf8")) as { state: object };
      if (o.state) parsed++;
    }
    const t1 = performance.now();
    const work = mainEngine.process(decodeMessages(chunk));
    const t2 = performance.now();
    decode.seconds += (t1 - t0) / 1000;
    main.seconds += (t2 - t1) / 1000;
    main.triggered += work.triggered;
    main.matched += work.matched;
  }
  main.rate = N / main.seconds;
  log(`decode-only: ${fmt(N / decode.seconds)} obs/s (${parsed})`);
  const heap = process.memoryUsage().heapUsed;
  log(`engine: ${fmt(main.rate)} obs/s, ${fmt(main.triggered)} triggered, ${fmt(main.matched)} matches`);

  // before/after on a sample: no index, mathjs evaluation
  const indexedSample = runEngine(w, data, SAMPLE, resolveThing, {});
  const unindexed = runEngine(w, data, SAMPLE, resolveThing, { indexRules: false });
  const mathjsSample = runEngine(w, data, MATHJS_SAMPLE, resolveThing, {});
  const mathjs = runEngine(w, data, MATHJS_SAMPLE, resolveThing, { compile: { expressionMode: "mathjs" } });
  log(`sample: indexed ${fmt(indexedSample.rate)}, unindexed ${fmt(unindexed.rate)}, mathjs ${fmt(mathjs.rate)}`);

  // with everything written: observation store (its writer thread), state checkpoints (SQLite), against the
  // in-memory engine on the same observations, block by block
  const durable = await runDurable(DURABLE_WARM, DURABLE_SAMPLE, CHUNK);
  log(
    `durable: ${fmt(durable.durableRate)} obs/s, in memory ${fmt(durable.memoryRate)} (${ratio(durable.durableRate, durable.memoryRate)}); store path ${fmt(durable.storeRate)} rows/s`,
  );

  // (b) json-rules-engine on a sample
  const jre = await runJsonRulesEngine(w, data.chunk(0, JRE_SAMPLE));
  log(`json-rules-engine: ${fmt(jre.rate)} obs/s`);

  // (c) the rate by rules per thing type, and (d) the JVM CEP peer beside dms on the same sample
  const sweep = sweepRules((s, e) => data.chunk(s, e), SWEEP_SAMPLE, CHUNK);
  for (const p of sweep) log(`${p.rulesPerType} rules/type: ${fmt(p.rate)} obs/s (decode-only ${fmt(p.decodeRate)})`);
  const peerLoad = loadAverage();
  const dmsOnSample = PEER_SAMPLE > 0 ? runEngine(w, data, PEER_SAMPLE, resolveThing, {}) : undefined;
  // Every formulation of the rules in Esper (ESPER_FORMULATIONS picks some), reported against the best correct one.
  const peer = dmsOnSample
    ? await runFormulations(
        { rules: w.rules, things: w.things, messages: () => data.messages(PEER_SAMPLE) },
        formulationsFromEnv(),
      )
    : undefined;
  for (const r of peer ?? [])
    log(`peer ${r.formulation}: ${"skipped" in r ? r.skipped : `${fmt(r.observations / r.seconds)} obs/s`}`);
  const best = peer && dmsOnSample ? bestCorrect(peer, { observations: PEER_SAMPLE, ...dmsOnSample }) : undefined;

  const nsPerObs = (1e9 * main.seconds) / N;
  const rows: (string | number)[][] = [
    ["decode-only (JSON.parse, the ceiling)", fmt(N), fmt(N / decode.seconds), fmt((1e9 * decode.seconds) / N), "1.00"],
    [
      "dms engine (indexed, JS expressions)",
      fmt(N),
      fmt(main.rate),
      fmt(nsPerObs),
      ratio(main.rate, N / decode.seconds),
    ],
    [
      "dms engine, rules not indexed (sample)",
      fmt(SAMPLE),
      fmt(unindexed.rate),
      fmt(1e9 / unindexed.rate),
      ratio(unindexed.rate, N / decode.seconds),
    ],
    [
      "dms engine, ${} via mathjs evaluate (sample)",
      fmt(MATHJS_SAMPLE),
      fmt(mathjs.rate),
      fmt(1e9 / mathjs.rate),
      ratio(mathjs.rate, N / decode.seconds),
    ],
    [
      "dms engine + SQLite store + state checkpoints (sample)",
      fmt(durable.observations),
      fmt(durable.durableRate),
      fmt(1e9 / durable.durableRate),
      ratio(durable.durableRate, N / decode.seconds),
    ],
    [
      "json-rules-engine (sample)",
      fmt(JRE_SAMPLE),
      fmt(jre.rate, 1),
      fmt(1e9 / jre.rate),
      ratio(jre.rate, N / decode.seconds),
    ],
  ];
  const facts = table(
    ["figure", "value"],
    [
      ["observations/s on one core (engine)", fmt(main.rate)],
      ["engine / decode-only", ratio(main.rate, N / decode.seconds)],
      ["engine / json-rules-engine", `${fmt(main.rate / jre.rate)}x`],
      [
        "durable engine / in-memory engine (same observations, block by block)",
        `${ratio(durable.durableRate, durable.memoryRate)} (${fmt(durable.durableRate)} / ${fmt(durable.memoryRate)})`,
      ],
      ["observations stored per second by the store path alone", fmt(durable.storeRate)],
      ["indexed / not indexed (sample)", `${(indexedSample.rate / unindexed.rate).toFixed(2)}x`],
      ["JS expressions / mathjs evaluate (sample)", `${(mathjsSample.rate / mathjs.rate).toFixed(2)}x`],
      ["ns per observation", fmt(nsPerObs)],
      [`ns per applicable rule (${RULES_PER_TYPE} rules per thing type)`, fmt(nsPerObs / RULES_PER_TYPE, 1)],
      ["rule matches per observation", (main.matched / N).toFixed(3)],
      ["observations triggering actions", `${((100 * main.triggered) / N).toFixed(3)} %`],
      ["heap used after the run", `${fmt(heap / 2 ** 20)} MiB`],
    ],
  );
  const targets = table(
    ["target", "reached"],
    [
      [">= 500,000 observations/s on one core", main.rate >= 500_000 ? "yes" : `no (${fmt(main.rate)})`],
      [">= 0.5 of the decode-only rate", main.rate / (N / decode.seconds) >= 0.5 ? "yes" : "no"],
      [">= 100x json-rules-engine", main.rate / jre.rate >= 100 ? "yes" : "no"],
      [">= 0.7: durable / in-memory engine", durable.durableRate / durable.memoryRate >= 0.7 ? "yes" : "no"],
      ["store path >= the durable engine's rate", durable.storeRate >= durable.durableRate ? "yes" : "no"],
    ],
  );
  const sweepTable = table(
    ["rules per thing type", "rules", "observations/s", "vs decode-only", "rule matches per observation"],
    sweep.map((p) => [
      fmt(p.rulesPerType),
      fmt(p.rules),
      fmt(p.rate),
      ratio(p.rate, p.decodeRate),
      p.matchesPerObservation.toFixed(2),
    ]),
  );
  const body = [
    header("bench/engine: decode + evaluate + state update, in process", `npx tsx bench/engine/index.ts ${N}`),
    `Load average at the start / at the peer: ${startLoad} / ${peerLoad}. Charts: [rate by rules per type](charts/engine-rules.svg), [ratios](charts/ratios.svg).`,
    "",
    `Workload (seeded): ${fmt(w.things.length)} things over ${w.types.length} thing types, ${fmt(w.rules.length)} rules (${RULES_PER_TYPE} per type: gt/gte/lt/lte and eq on constants, \`\${}\` expressions over thing.state and observation, 25-point polygons, POIs, enter/leave, two-condition rules; each matching about 2 % of observations; threshold count 3). ${fmt(N)} observations as JSON bytes (about ${Math.round(data.bytes.length / N)} bytes each, in one buffer), handed over in chunks of ${fmt(CHUNK)} as a source would (building a chunk is not timed, in any pass), on one thread; state in memory (the durable row adds the observation store, written by its thread, and the SQLite state checkpoint every ${fmt(service.DMS_ENGINE_CHECKPOINT_MS)} ms of its measured time with a last one inside the last block, fed with 3 chunks in flight as the Kafka source does, after ${fmt(DURABLE_WARM)} observations that warm it, on the ${fmt(DURABLE_SAMPLE)} after them; each engine runs in a process of its own, as the service does, and the durable one is compared with the in-memory one on the same observations, block by block). json-rules-engine: one engine per thing type with the same 100 rules (custom operators for geometry and expressions, facts = observation and previous state), run on the first ${fmt(JRE_SAMPLE)} observations.`,
    "",
    table(["run", "observations", "observations/s", "ns/observation", "vs decode-only"], rows),
    "",
    facts,
    "",
    targets,
    "",
    `### By rules per thing type\n\nThe first ${fmt(SWEEP_SAMPLE)} observations through an engine loaded with ${RULES_PER_TYPE_SWEEP.join(", ")} rules per type (past 100, more blocks of the same mix), each interleaved with JSON.parse alone.\n`,
    sweepTable,
    ...(peer && dmsOnSample ? ["", peerSection(peer, { observations: PEER_SAMPLE, ...dmsOnSample })] : []),
  ].join("\n");
  console.log(body);
  writeSection("engine", body);
  recordFigures("engine", {
    date: new Date().toISOString(),
    load: startLoad,
    observations: N,
    decodeRate: N / decode.seconds,
    engineRate: main.rate,
    durableRate: durable.durableRate,
    durableMemoryRate: durable.memoryRate,
    storeRate: durable.storeRate,
    jsonRulesEngineRate: jre.rate,
    ...(best && dmsOnSample
      ? {
          peer: {
            name: `Esper ${best.esper} (${best.formulation})`,
            observations: PEER_SAMPLE,
            rate: best.observations / best.seconds,
            dmsRate: dmsOnSample.rate,
          },
        }
      : {}),
    sweep,
  });
}

/** The durable section alone: its figures and the load, printed, nothing recorded. */
async function durableOnly(startLoad: string): Promise<void> {
  // Beside the service's durable engine, one that writes its state the other way (service.DMS_ENGINE_STATE_THREAD).
  const variants: DurableVariant[] = [
    service.DMS_ENGINE_STATE_THREAD
      ? { name: "state flushed on the engine's thread", writerThread: false }
      : { name: "state written by a thread of its own", writerThread: true },
    // The observation path alone: observations stored as the service's, the state in memory.
    {
      name: "observations stored, state in memory",
      writerThread: service.DMS_ENGINE_STATE_THREAD,
      stateInMemory: true,
    },
  ];
  // ENGINE_IN_FLIGHT=8: one more durable engine as the service's, fed with that many chunks in flight.
  const inFlight = Number(process.env.ENGINE_IN_FLIGHT ?? 0);
  if (inFlight > 0)
    variants.push({ name: `${inFlight} chunks in flight`, writerThread: service.DMS_ENGINE_STATE_THREAD, inFlight });
  // ENGINE_CHECKPOINT_MS=1000,5000: more durable engines as the service's, checkpointing that often.
  for (const ms of (process.env.ENGINE_CHECKPOINT_MS ?? "").split(",").filter(Boolean))
    variants.push({
      name: `checkpoint every ${ms} ms`,
      writerThread: service.DMS_ENGINE_STATE_THREAD,
      checkpointMs: Number(ms),
    });
  const durable = await runDurable(DURABLE_WARM, DURABLE_SAMPLE, CHUNK, variants);
  console.log(
    [
      header(
        "bench/engine: durable engine / in-memory engine",
        `ENGINE_ONLY=durable npx tsx bench/engine/index.ts ${N}`,
      ),
      `Load average at the start / at the end: ${startLoad} / ${loadAverage()}.`,
      "",
      table(
        ["figure", "value"],
        [
          [
            "durable engine / in-memory engine (same observations, block by block)",
            `${ratio(durable.durableRate, durable.memoryRate)} (${fmt(durable.durableRate)} / ${fmt(durable.memoryRate)})`,
          ],
          ["the durable engine's thread on a core", `${fmt(100 * durable.durableBusy)} %`],
          ["the in-memory engine's thread on a core", `${fmt(100 * durable.memoryBusy)} %`],
          ...durable.variants.flatMap((v) => [
            [`${v.name} / in-memory engine`, `${ratio(v.rate, durable.memoryRate)} (${fmt(v.rate)})`],
            [`${v.name}: the engine's thread on a core`, `${fmt(100 * v.busy)} %`],
          ]),
          ["observations stored per second by the store path alone", fmt(durable.storeRate)],
        ],
      ),
      "",
      "CPU per observation by thread, measured blocks:",
      `- in-memory engine: ${perObservation(durable.memoryCpu, durable.observations)}`,
      `- durable engine: ${perObservation(durable.durableCpu, durable.observations)}`,
      ...durable.variants.map((v) => `- ${v.name}: ${perObservation(v.cpu, durable.observations)}`),
    ].join("\n"),
  );
}

function ratio(a: number, b: number): string {
  return (a / b).toFixed(2);
}

/** Runs `fn` over every chunk of [0, n), timing `fn` only. */
function timedChunks(data: Encoded, n: number, fn: (chunk: RawObservation[]) => void): number {
  let ms = 0;
  for (let start = 0; start < n; start += CHUNK) {
    const chunk = data.chunk(start, Math.min(n, start + CHUNK));
    const t0 = performance.now();
    fn(chunk);
    ms += performance.now() - t0;
  }
  return ms / 1000;
}

const discard = { accept: async (_: readonly TriggeredAction[]): Promise<void> => {} };

function runEngine(
  w: Workload,
  data: Encoded,
  n: number,
  resolveThing: (name: string) => ThingInfo | undefined,
  extra: Partial<EngineOptions>,
): { rate: number; seconds: number; triggered: number; matched: number } {
  const engine = new RuleEngine({
    resolveThing,
    state: new MemoryStateStore(),
    sink: discard,
    clock: () => WORKLOAD_EPOCH_MS,
    ...extra,
  });
  engine.load(w.rules);
  let triggered = 0;
  let matched = 0;
  const seconds = timedChunks(data, n, (chunk) => {
    const work = engine.process(decodeMessages(chunk));
    triggered += work.triggered;
    matched += work.matched;
  });
  return { rate: n / seconds, seconds, triggered, matched };
}

// ---- json-rules-engine, the same rules ----

interface Pair {
  obs: Record<string, unknown>;
  prev: Record<string, unknown>;
}

function position(v: unknown): [number, number] | undefined {
  const out: [number, number] = [0, 0];
  return readGeoPoint(v, out) ? out : undefined;
}

async function runJsonRulesEngine(w: Workload, raws: RawObservation[]): Promise<{ rate: number }> {
  const engines = new Map<string, JsonRulesEngine>();
  const byType = new Map<string, Rule[]>();
  for (const r of w.rules) byType.set(r.filter.thingType, [...(byType.get(r.filter.thingType) ?? []), r]);
  for (const [type, rules] of byType) {
    const e = new JsonRulesEngine([], { allowUndefinedFacts: true });
    addOperators(e);
    for (const r of rules) e.addRule(toJre(r));
    engines.set(type, e);
  }
  const typeOf = new Map(w.things.map((t) => [t.thingName, t.thingType]));
  const states = new Map<string, Record<string, unknown>>();
  const counters = new Map<string, { count: number; seq: number }>();
  const seqs = new Map<string, number>();
  let triggered = 0;
  const t0 = performance.now();
  for (const raw of raws) {
    const o = JSON.parse((raw.value as Buffer).toString("utf8")) as {
      thingName: string;
      state: Record<string, unknown>;
    };
    const prev = states.get(o.thingName) ?? {};
    const seq = (seqs.get(o.thingName) ?? 0) + 1;
    seqs.set(o.thingName, seq);
    const { events } = await engines.get(typeOf.get(o.thingName)!)!.run({ pair: { obs: o.state, prev }, obs: o.state });
    for (const ev of events) {
      const key = `${String(ev.params?.id)}\u0000${o.thingName}`;
      const c = counters.get(key) ?? { count: 0, seq: -1 };
      c.count = c.seq === seq - 1 ? c.count + 1 : 1;
      c.seq = seq;
      if (c.count >= 3) {
        c.count = 0;
        triggered++;
      }
      counters.set(key, c);
    }
    states.set(o.thingName, { ...prev, ...o.state });
  }
  void triggered;
  return { rate: raws.length / ((performance.now() - t0) / 1000) };
}

const JRE_OPS: Record<string, string> = {
  gt: "greaterThan",
  gte: "greaterThanInclusive",
  lt: "lessThan",
  lte: "lessThanInclusive",
  eq: "equal",
  ne: "notEqual",
};

function toJre(rule: Rule): RuleProperties {
  return {
    name: rule.id,
    conditions: { all: rule.expression.map(condition) },
    event: { type: "match", params: { id: rule.id } },
  } as RuleProperties;
}

function condition(item: ExpressionItem): { fact: string; path?: string; operator: string; value: unknown } {
  if (typeof item.value === "string" && item.value.includes("${")) {
    // The same arithmetic as a plain function: json-rules-engine has no expression language.
    const src = item.value.slice(2, -1);
    const m = /^(thing\.state|observation)\.(\w+) (?:\* 1 )?\+ (\d+)$/.exec(src)!;
    return {
      fact: "pair",
      operator: "exprGt",
      value: { resource: item.resource, from: m[1] === "thing.state" ? "prev" : "obs", name: m[2], plus: Number(m[3]) },
    };
  }
  if (
    ["inside", "outside", "enter", "leave", "insidePoi", "outsidePoi", "enterPoi", "leavePoi"].includes(item.operator)
  ) {
    return { fact: "pair", operator: item.operator, value: item.value };
  }
  return { fact: "obs", path: `$.${item.resource}`, operator: JRE_OPS[item.operator]!, value: item.value };
}

function addOperators(e: JsonRulesEngine): void {
  const polygons = new WeakMap<object, ReturnType<typeof turfPolygon>>();
  const poly = (v: [number, number][]): ReturnType<typeof turfPolygon> => {
    let p = polygons.get(v);
    if (!p) polygons.set(v, (p = turfPolygon([v])));
    return p;
  };
  const inPoly = (pos: unknown, v: [number, number][]): boolean => {
    const p = position(pos);
    return p !== undefined && booleanPointInPolygon(p, poly(v));
  };
  const inPoi = (pos: unknown, v: Poi): boolean => {
    const p = position(pos);
    return (
      p !== undefined && distance([Number(v.center.lon), Number(v.center.lat)], p, { units: "meters" }) <= v.radius
    );
  };
  e.addOperator("exprGt", (pair: Pair, v: { resource: string; from: "prev" | "obs"; name: string; plus: number }) => {
    const a = pair.obs[v.resource];
    const b = pair[v.from][v.name];
    return typeof a === "number" && typeof b === "number" && a > b + v.plus;
  });
  e.addOperator("inside", (pair: Pair, v: [number, number][]) => inPoly(pair.obs.latlng, v));
  e.addOperator(
    "outside",
    (pair: Pair, v: [number, number][]) => pair.obs.latlng !== undefined && !inPoly(pair.obs.latlng, v),
  );
  e.addOperator(
    "enter",
    (pair: Pair, v: [number, number][]) =>
      pair.prev.latlng !== undefined && inPoly(pair.obs.latlng, v) && !inPoly(pair.prev.latlng, v),
  );
  e.addOperator(
    "leave",
    (pair: Pair, v: [number, number][]) =>
      pair.prev.latlng !== undefined && !inPoly(pair.obs.latlng, v) && inPoly(pair.prev.latlng, v),
  );
  e.addOperator("insidePoi", (pair: Pair, v: Poi) => inPoi(pair.obs.latlng, v));
  e.addOperator("outsidePoi", (pair: Pair, v: Poi) => pair.obs.latlng !== undefined && !inPoi(pair.obs.latlng, v));
  e.addOperator(
    "enterPoi",
    (pair: Pair, v: Poi) => pair.prev.latlng !== undefined && inPoi(pair.obs.latlng, v) && !inPoi(pair.prev.latlng, v),
  );
  e.addOperator(
    "leavePoi",
    (pair: Pair, v: Poi) => pair.prev.latlng !== undefined && !inPoi(pair.obs.latlng, v) && inPoi(pair.prev.latlng, v),
  );
}

await main();
