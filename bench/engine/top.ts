/**
 * Self time by function, and the hottest lines, of a V8 .cpuprofile:
 *   npx tsx bench/engine/top.ts <file.cpuprofile> [rows]
 * Line numbers are those of the code V8 ran: profile a `tsc --outDir` build for lines that match the source.
 */
import { readFileSync } from "node:fs";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  positionTicks?: { line: number; ticks: number }[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const profile = JSON.parse(readFileSync(process.argv[2]!, "utf8")) as Profile;
const rows = Number(process.argv[3] ?? 30);
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const where = (n: ProfileNode): string =>
  `${n.callFrame.functionName || "(anonymous)"} ${n.callFrame.url.split("/").slice(-2).join("/")}`;

const self = new Map<string, number>();
let total = 0;
profile.samples.forEach((id, i) => {
  const n = byId.get(id)!;
  const dt = profile.timeDeltas[i] ?? 0;
  const key = `${where(n)}:${n.callFrame.lineNumber + 1}`;
  self.set(key, (self.get(key) ?? 0) + dt);
  total += dt;
});
const lines = new Map<string, number>();
for (const n of profile.nodes) {
  for (const p of n.positionTicks ?? []) {
    const key = `${where(n)}:${p.line}`;
    lines.set(key, (lines.get(key) ?? 0) + p.ticks);
  }
}

const top = <K>(m: Map<K, number>): [K, number][] => [...m].sort((a, b) => b[1] - a[1]).slice(0, rows);
console.log("self time by function");
for (const [k, us] of top(self))
  console.log(`${((100 * us) / total).toFixed(1).padStart(5)} %  ${(us / 1000).toFixed(0).padStart(6)} ms  ${k}`);
console.log("\nhottest lines (samples)");
for (const [k, ticks] of top(lines)) console.log(`${String(ticks).padStart(6)}  ${k}`);
