/**
 * The decode alone on the bench workload's bytes: the fast path (`scanObservation`) against
 * `JSON.parse(buffer.toString("utf8"))`, and `decodeBytes` against its JSON.parse path
 * (`decodeBytesByJsonParse`), chunk by chunk in turn so that both see the same load.
 *   npx tsx bench/engine/decode.ts [observations]
 * Prints ns per observation by CPU time (steadier than wall time on a shared machine) and the ratios.
 */
import { decodeBytes, decodeBytesByJsonParse, scanObservation, type SourcePosition } from "../../src/engine/index.js";
import { loadAverage } from "./report.js";
import { workload } from "./workload.js";

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
