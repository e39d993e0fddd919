/**
 * Memory over a stream of distinct expressions: compiles N rules with distinct `${}` values and
 * renders N distinct action templates (what 100,000 `POST /rules/test` calls with distinct
 * expressions compile), printing RSS and heap after GC every 10,000. With every cache bounded
 * (docs/engine.md, "Caches") both level off once the caches are full.
 * Rerun: `npx tsx bench/caches/index.ts` (BENCH_CACHES_TOTAL=100000).
 */
import { cpus, loadavg } from "node:os";
import { template, templateCacheSize } from "../../src/actions/index.js";
import { compileRule, generatedCacheSize } from "../../src/engine/index.js";
import { fullGc } from "../gc.js";
import { distinctRule } from "./workload.js";

const TOTAL = Number(process.env.BENCH_CACHES_TOTAL ?? 100_000);
const MB = 1024 * 1024;

console.log(
  `machine: ${cpus()[0]?.model}, ${cpus().length} cores, Node ${process.version}, ${new Date().toISOString()}`,
);
console.log(
  `load average at start: ${loadavg()
    .map((l) => l.toFixed(1))
    .join(" ")}`,
);
console.log("| expressions | RSS MB | heap after GC MB | generated cache | template cache |");
console.log("| --- | --- | --- | --- | --- |");
const scope = { observation: { temp: 3 } };
for (let i = 1; i <= TOTAL; i++) {
  compileRule(distinctRule(i));
  template(`t${i} \${observation.temp * ${i}}`).render(scope, () => undefined);
  if (i % 10_000 === 0) {
    fullGc();
    const m = process.memoryUsage();
    console.log(
      `| ${i} | ${(m.rss / MB).toFixed(0)} | ${(m.heapUsed / MB).toFixed(1)} | ${generatedCacheSize()} | ${templateCacheSize()} |`,
    );
  }
}
