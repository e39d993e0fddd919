/**
 * What held the event loop: reads CPU profiles written by bench/find with
 * BENCH_FIND_CPU_PROFILE=<dir> and prints, per profile, the longest stretches
 * of consecutive non-idle samples (a task the loop could not leave) with the
 * project functions that took most of each, and the self time per function.
 * Rerun: npx tsx bench/find/long-tasks.ts <dir> [min ms, default 20]
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const dir = process.argv[2];
if (!dir) throw new Error("usage: npx tsx bench/find/long-tasks.ts <dir> [min ms]");
const minMs = Number(process.argv[3] ?? 20);

const where = (f: CallFrame): string =>
  `${f.functionName || "(anonymous)"} ${f.url.replace(/^.*\/(src|bench|node_modules)\//, "$1/")}:${f.lineNumber + 1}`;

for (const file of readdirSync(dir)
  .filter((f) => f.endsWith(".cpuprofile"))
  .sort()) {
  const profile = JSON.parse(readFileSync(join(dir, file), "utf8")) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  /** The innermost frame of the project (src/) on the sample's stack, else the innermost frame. */
  const owner = (id: number): string => {
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const f = byId.get(at)!.callFrame;
      if (f.url.includes("/src/")) return where(f);
    }
    return where(byId.get(id)!.callFrame);
  };
  const self = new Map<string, number>();
  const tasks: { ms: number; owners: Map<string, number> }[] = [];
  let current: { ms: number; owners: Map<string, number> } | undefined;
  let total = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const ms = (profile.timeDeltas[i + 1] ?? 0) / 1000;
    const node = byId.get(profile.samples[i]!)!;
    total += ms;
    if (node.callFrame.functionName === "(idle)") {
      if (current && current.ms >= minMs) tasks.push(current);
      current = undefined;
      continue;
    }
    const key = owner(node.id);
    self.set(where(node.callFrame), (self.get(where(node.callFrame)) ?? 0) + ms);
    current ??= { ms: 0, owners: new Map() };
    current.ms += ms;
    current.owners.set(key, (current.owners.get(key) ?? 0) + ms);
  }
  if (current && current.ms >= minMs) tasks.push(current);
  const busy = [...self.values()].reduce((a, b) => a + b, 0);
  console.log(
    `\n## ${file}: ${total.toFixed(0)} ms profiled, ${busy.toFixed(0)} ms busy, ${tasks.length} tasks >= ${minMs} ms`,
  );
  for (const t of tasks.sort((a, b) => b.ms - a.ms).slice(0, 8)) {
    const top = [...t.owners.entries()].sort((a, b) => b[1] - a[1]).slice(0, 3);
    console.log(`- ${t.ms.toFixed(0)} ms: ${top.map(([k, v]) => `${k} ${v.toFixed(0)} ms`).join("; ")}`);
  }
  console.log("self time:");
  for (const [k, v] of [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, 12))
    console.log(`  ${v.toFixed(0).padStart(6)} ms ${k}`);
}
