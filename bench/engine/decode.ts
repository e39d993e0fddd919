/**
 * The decode on the bench workload's bytes, chunk by chunk in turn so that both sides see the same load:
 *   npx tsx bench/engine/decode.ts [observations]
 * 1. alone: the fast path (`scanObservation`) against `JSON.parse(buffer.toString("utf8"))`, and
 *    `decodeBytes` against its JSON.parse path (`decodeBytesByJsonParse`);
 * 2. in the engine: two engines with the same rules, one fed by each decode (`RULES=0`: none),
 *    CPU time of decode + `process` per chunk; the median of the per-chunk ratios (past the first
 *    100,000 observations, which make the things) is the figure least moved by other jobs.
 * By CPU time (steadier than wall time on a shared machine).
 */
import {
  decodeBytes,
  decodeBytesByJsonParse,
  scanObservation,
  type Ingested,
  type RawObservation,
  type SourcePosition,
} from "../../src/engine/index.js";
import { loadAverage } from "./report.js";
import { memoryEngine, rawChunk, workload } from "./workload.js";

const N = Number(process.argv[2] ?? 1_000_000);
const CHUNK = 10_000;
const ROUNDS = 3;
const w = workload();
const messages: Buffer[] = [];
for (let i = 0; i < N; i++) messages.push(Buffer.from(w.message(i)));
const position: SourcePosition = { source: "kafka:bench", partition: 0, offset: "0" };

const cpu = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const variants: Record<string, (b: Buffer) => unknown> = {
  "JSON.parse(toString)": (b) => JSON.parse(b.toString("utf8")),
  scanObservation: (b) => scanObservation(b),
  decodeBytesByJsonParse: (b) => decodeBytesByJsonParse(b, position),
  decodeBytes: (b) => decodeBytes(b, position),
};
const ms = Object.fromEntries(Object.keys(variants).map((k) => [k, 0]));
let kept = 0;
for (let round = 0; round < ROUNDS; round++) {
  for (let start = 0; start < N; start += CHUNK) {
    const end = Math.min(N, start + CHUNK);
    for (const [name, f] of Object.entries(variants)) {
      const c0 = cpu();
      for (let i = start; i < end; i++) if (f(messages[i]!) !== undefined) kept++;
      // The first round warms up (and lets every variant reach its optimized code).
      if (round > 0) ms[name]! += cpu() - c0;
    }
  }
}
const ns = (name: string): number => (ms[name]! * 1e6) / (N * (ROUNDS - 1));
for (const name of Object.keys(variants)) console.log(`${name.padEnd(24)} ${ns(name).toFixed(0)} ns/obs`);
console.log(
  `scanObservation / JSON.parse(toString): ${(ns("scanObservation") / ns("JSON.parse(toString)")).toFixed(2)}; ` +
    `decodeBytes / decodeBytesByJsonParse: ${(ns("decodeBytes") / ns("decodeBytesByJsonParse")).toFixed(2)} ` +
    `(load ${loadAverage()}; ${kept} decoded)`,
);

// 2. In the engine.
const engineChunk = 5_000;
const decoders: ((raw: RawObservation) => Ingested)[] = [
  (raw) => decodeBytesByJsonParse(raw.value, raw.position, { key: raw.key }),
  (raw) => decodeBytes(raw.value, raw.position, { key: raw.key }),
];
const engines = decoders.map(() => memoryEngine(w, process.env.RULES === "0" ? [] : w.rules));
const spent = [0, 0];
const results = ["", ""];
const ratios: number[] = [];
for (let start = 0; start < N; start += engineChunk) {
  const chunk = rawChunk(messages, start, start + engineChunk);
  const here = [0, 0];
  // Each goes first every other chunk.
  for (const e of (start / engineChunk) % 2 === 0 ? [0, 1] : [1, 0]) {
    const c0 = cpu();
    const r = engines[e]!.process(chunk.map(decoders[e]!));
    here[e] = cpu() - c0;
    spent[e]! += here[e];
    results[e] += `${r.triggered}/${r.matched} `;
  }
  if (start >= 100_000) ratios.push(here[1]! / here[0]!);
}
ratios.sort((a, b) => a - b);
const q = (f: number): string => (ratios[Math.floor(f * (ratios.length - 1))] ?? NaN).toFixed(3);
console.log(
  `engine${process.env.RULES === "0" ? " (RULES=0)" : ""}, CPU µs/obs: JSON.parse path ${((spent[0]! * 1000) / N).toFixed(2)}, ` +
    `fast path ${((spent[1]! * 1000) / N).toFixed(2)}; fast / JSON.parse per chunk: median ${q(0.5)} (quartiles ${q(0.25)}, ${q(0.75)}); ` +
    `same triggers and matches: ${results[0] === results[1]} (load ${loadAverage()})`,
);
