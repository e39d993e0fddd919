/**
 * The engine pass of bench/engine alone, for profiling:
 *   node --cpu-prof --cpu-prof-dir=/tmp/prof --import tsx bench/engine/profile.ts [observations]
 * then `npx tsx bench/engine/top.ts /tmp/prof/<file>.cpuprofile` for self time by function and line.
 * Prints the engine's rate against JSON.parse over the same chunks, by wall and by CPU time (the
 * latter steadier on a shared machine). RULES=0 runs the engine without rules (decode, checks and
 * state alone); `--expose-gc` adds the heap after a full GC. For an A/B, run it in two worktrees
 * alternately.
 */
import { performance } from "node:perf_hooks";
import { decodeMessages } from "../../src/engine/index.js";
import { memoryEngine, rawChunk, workload } from "./workload.js";

const N = Number(process.argv[2] ?? 500_000);
const CHUNK = 5_000;
const w = workload();
const messages: Buffer[] = [];
for (let i = 0; i < N; i++) messages.push(Buffer.from(w.message(i)));
const engine = memoryEngine(w, process.env.RULES === "0" ? [] : w.rules);
let engineMs = 0;
let decodeMs = 0;
// CPU time as well as wall time: on a shared machine the wall clock also counts time spent descheduled.
let engineCpu = 0;
let decodeCpu = 0;
const cpu = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
for (let start = 0; start < N; start += CHUNK) {
  const chunk = rawChunk(messages, start, start + CHUNK);
  const c0 = cpu();
  const t0 = performance.now();
  for (const raw of chunk) JSON.parse((raw.value as Buffer).toString("utf8"));
  const t1 = performance.now();
  const c1 = cpu();
  engine.process(decodeMessages(chunk));
  const t2 = performance.now();
  const c2 = cpu();
  decodeMs += t1 - t0;
  engineMs += t2 - t1;
  decodeCpu += c1 - c0;
  engineCpu += c2 - c1;
}
const rate = (ms: number): string => Math.round(N / (ms / 1000)).toLocaleString("en");
console.log(
  `engine ${rate(engineMs)} obs/s, decode-only ${rate(decodeMs)} obs/s, ratio ${(decodeMs / engineMs).toFixed(2)}; ` +
    `CPU time: engine ${rate(engineCpu)} obs/s, decode-only ${rate(decodeCpu)} obs/s, ratio ${(decodeCpu / engineCpu).toFixed(2)}`,
);
const gc = (globalThis as { gc?: () => void }).gc;
if (gc) {
  gc();
  console.log(`heap after a full GC: ${Math.round(process.memoryUsage().heapUsed / 2 ** 20)} MiB`);
}
