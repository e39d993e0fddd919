import type { TriggeredAction } from "../../src/actions/index.js";
import {
  MemoryStateStore,
  RuleEngine,
  type RawObservation,
  type ThingInfo,
  type ThingResolver,
} from "../../src/engine/index.js";
import type { Rule } from "../../src/rules/index.js";

/** mulberry32: a small seeded generator, so every run sees the same workload. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface Workload {
  types: string[];
  things: { thingName: string; thingType: string }[];
  rules: Rule[];
  /** Observation i as JSON text. */
  message(i: number): string;
  thingOf(i: number): string;
}

/** The workload's observations are timestamped from here on, one millisecond apart: a live stream's day. */
export const WORKLOAD_EPOCH_MS = 1_763_000_000_000;

export const STATUSES = Array.from({ length: 50 }, (_, i) => `s${i}`);
// Positions fall uniformly in a 1 x 1 degree box.
const LON0 = 10;
const LAT0 = 59;
const BOX_KM2 = 111.32 * Math.cos((59.5 * Math.PI) / 180) * 111.32 * 1;

/**
 * 100,000 things over 100 thing types; 100 rules per type (up to 1,000: more blocks of the same mix), each matching
 * about 2 % of observations: constants (gt/lt on three numbers, eq on a
 * string), `${}` expressions over thing.state and observation, 25-point
 * polygons, POIs, enter/leave, and two-condition rules. Threshold count 3
 * (consecutive) makes about 0.1 % of observations trigger.
 */
export function workload(
  options: { types?: number; thingsPerType?: number; rulesPerType?: number; seed?: number } = {},
): Workload {
  const typeCount = options.types ?? 100;
  const perType = options.thingsPerType ?? 1000;
  const seed = options.seed ?? 42;
  const r = rng(seed);
  const types = Array.from({ length: typeCount }, (_, i) => `T${i}`);
  const things = types.flatMap((t) =>
    Array.from({ length: perType }, (_, i) => ({ thingName: `${t}-${i}`, thingType: t })),
  );
  const rulesPerType = options.rulesPerType ?? 100;
  const byType = new Map(types.map((t) => [t, rulesFor(t, r, 0)]));
  // Past 100 rules per type, more blocks of the same mix from a second generator, so the first 100
  // of each type stay the rules every other run has.
  const more = rng(seed + 1);
  for (let block = 1; block * 100 < rulesPerType; block++)
    for (const t of types) byType.get(t)!.push(...rulesFor(t, more, block * 100));
  const kept = types.flatMap((t) => byType.get(t)!.slice(0, rulesPerType));

  return {
    types,
    things,
    rules: kept,
    thingOf: (i) => things[thingIndex(seed, i, things.length)]!.thingName,
    message(i) {
      const m = rng(seed * 7919 + i);
      const thing = things[thingIndex(seed, i, things.length)]!;
      const lat = (LAT0 + m()).toFixed(5);
      const lon = (LON0 + m()).toFixed(5);
      return `{"thingName":"${thing.thingName}","timestamp":${WORKLOAD_EPOCH_MS + i},"state":{"temp":${Math.floor(m() * 1000)},"hum":${Math.floor(m() * 1000)},"press":${Math.floor(m() * 1000)},"status":"${STATUSES[Math.floor(m() * STATUSES.length)]}","latlng":"${lat},${lon}"}}`;
    },
  };
}

/** The engine's view of the workload's things: all in domain root, no resource type checks. */
export function thingResolver(things: readonly { thingName: string; thingType: string }[]): ThingResolver {
  const checks = new Map<string, (v: unknown) => boolean>();
  const infos = new Map<string, ThingInfo>();
  for (const { thingName, thingType } of things) {
    infos.set(thingName, { thingName, thingType, domain: "root", domains: new Set(["root"]), checks });
  }
  return (name) => infos.get(name);
}

/** The in-memory engine the benches run on the workload: its things, `rules` loaded, actions dropped, a fixed clock. */
export function memoryEngine(w: Workload, rules: readonly Rule[]): RuleEngine {
  const engine = new RuleEngine({
    resolveThing: thingResolver(w.things),
    state: new MemoryStateStore(),
    sink: { accept: async (_: readonly TriggeredAction[]): Promise<void> => {} },
    clock: () => WORKLOAD_EPOCH_MS,
  });
  engine.load([...rules]);
  return engine;
}

/** Messages [start, end) as the Kafka source hands them over (offset = index). */
export function rawChunk(messages: readonly Buffer[], start: number, end: number): RawObservation[] {
  const chunk: RawObservation[] = [];
  for (let i = start; i < Math.min(messages.length, end); i++)
    chunk.push({
      key: null,
      value: messages[i]!,
      position: { source: "kafka:bench", partition: 0, offset: String(i) },
    });
  return chunk;
}

function thingIndex(seed: number, i: number, n: number): number {
  // A fixed permutation-like walk so each thing gets observations spread over the run.
  return (i * 7919 + seed) % n;
}

/** 100 rules of `type`, numbered from `first`. */
function rulesFor(type: string, r: () => number, first: number): Rule[] {
  const out: Rule[] = [];
  const base = (n: number, expression: Rule["expression"]): Rule => ({
    id: `${type}-r${n}`,
    name: `${type} rule ${n}`,
    enabled: true,
    filter: { domain: "root", thingType: type },
    expression,
    threshold: { count: 3, interval: 0 },
    actions: [{ type: "EVENT", config: { classification: "ALARM", message: "rule ${rule.name}" } }],
  });
  const numbers = ["temp", "hum", "press"];
  let n = first;
  // 20 x gt ~ 2 %, 10 x lt ~ 2 %
  for (let i = 0; i < 20; i++)
    out.push(
      base(n++, [{ operator: i % 2 ? "gte" : "gt", resource: numbers[i % 3]!, value: 975 + Math.floor(r() * 10) }]),
    );
  for (let i = 0; i < 10; i++)
    out.push(
      base(n++, [{ operator: i % 2 ? "lte" : "lt", resource: numbers[i % 3]!, value: 15 + Math.floor(r() * 10) }]),
    );
  // 15 x eq on a string of 50 values: 2 %
  for (let i = 0; i < 15; i++)
    out.push(base(n++, [{ operator: "eq", resource: "status", value: STATUSES[Math.floor(r() * 50)]! }]));
  // 15 x ${} expressions: P(a > b + 800) for a, b uniform on [0, 1000) is 2 %
  for (let i = 0; i < 15; i++) {
    const value =
      i % 3 === 0
        ? "${thing.state.temp + 800}"
        : i % 3 === 1
          ? "${observation.hum + 800}"
          : "${thing.state.press * 1 + 800}";
    out.push(base(n++, [{ operator: "gt", resource: numbers[i % 3]!, value }]));
  }
  // 10 x 25-point polygons and 10 x POIs covering 2 % of the box
  const radiusDeg = Math.sqrt(0.02 / Math.PI);
  for (let i = 0; i < 10; i++)
    out.push(base(n++, [{ operator: "inside", resource: "latlng", value: circle(r, radiusDeg) }]));
  const radiusM = Math.sqrt((0.02 * BOX_KM2) / Math.PI) * 1000;
  for (let i = 0; i < 10; i++)
    out.push(base(n++, [{ operator: "insidePoi", resource: "latlng", value: poi(r, radiusM) }]));
  // 10 x enter/leave
  for (let i = 0; i < 10; i++) {
    const operator = (["enter", "leave", "enterPoi", "leavePoi"] as const)[i % 4]!;
    const value = operator.endsWith("Poi") ? poi(r, radiusM) : circle(r, radiusDeg);
    out.push(base(n++, [{ operator, resource: "latlng", value }]));
  }
  // 10 x two conditions: temp > 900 (10 %) and hum > 800 (20 %)
  for (let i = 0; i < 10; i++) {
    out.push(
      base(n++, [
        { operator: "gt", resource: "hum", value: 795 + Math.floor(r() * 10) },
        { operator: "gt", resource: "temp", value: 895 + Math.floor(r() * 10) },
      ]),
    );
  }
  return out;
}

function centre(r: () => number, margin: number): [number, number] {
  return [LON0 + margin + r() * (1 - 2 * margin), LAT0 + margin + r() * (1 - 2 * margin)];
}

/** A 25-point polygon (24 corners and the closing point) around a random centre. */
function circle(r: () => number, radiusDeg: number): [number, number][] {
  const [lon, lat] = centre(r, radiusDeg);
  const pts: [number, number][] = [];
  for (let k = 0; k < 24; k++) {
    const a = (k / 24) * 2 * Math.PI;
    pts.push([lon + radiusDeg * Math.cos(a), lat + radiusDeg * Math.sin(a)]);
  }
  pts.push(pts[0]!);
  return pts;
}

function poi(r: () => number, radiusM: number): { center: { lat: string; lon: string }; radius: number } {
  const [lon, lat] = centre(r, 0.1);
  return { center: { lat: String(lat), lon: String(lon) }, radius: radiusM };
}

/**
 * All messages in one Buffer: 2,000,000 small Buffers would make a huge old
 * generation that no real consumer has (Kafka hands over a batch at a time),
 * and every major GC would pay for it in whichever pass ran.
 */
export class Encoded {
  readonly bytes: Buffer;
  readonly offsets: Int32Array;
  constructor(
    w: Workload,
    readonly length: number,
  ) {
    const parts: Buffer[] = [];
    this.offsets = new Int32Array(length + 1);
    for (let i = 0; i < length; i++) {
      const b = Buffer.from(w.message(i));
      parts.push(b);
      this.offsets[i + 1] = this.offsets[i]! + b.length;
    }
    this.bytes = Buffer.concat(parts);
  }

  /** The first n observations' bytes (the JVM peer's input). */
  *messages(n: number): Generator<Buffer> {
    for (let i = 0; i < Math.min(n, this.length); i++) yield this.bytes.subarray(this.offsets[i], this.offsets[i + 1]);
  }

  /** Observations [start, end) as a source would hand them over. */
  chunk(start: number, end: number): RawObservation[] {
    const out: RawObservation[] = [];
    for (let i = start; i < Math.min(end, this.length); i++) {
      out.push({
        key: null,
        value: this.bytes.subarray(this.offsets[i], this.offsets[i + 1]),
        position: { source: "kafka:bench", partition: 0, offset: String(i) },
      });
    }
    return out;
  }
}
