/**
 * `npm run bench`: runs every benchmark (`bench/<name>/index.ts`) one after
 * another, so they never compete for the machine's cores.
 * `npm run bench -- engine proxy` runs only those. Writes bench/RESULTS.md and the SVG charts of the
 * main series in bench/charts/ (bench/charts.ts).
 */
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { writeCharts } from "./charts.js";

const here = dirname(fileURLToPath(import.meta.url));
const wanted = process.argv.slice(2);
const names = readdirSync(here, { withFileTypes: true })
  .filter((d) => d.isDirectory() && existsSync(join(here, d.name, "index.ts")))
  .map((d) => d.name)
  .filter((n) => wanted.length === 0 || wanted.includes(n))
  .sort();

let failed = 0;
for (const name of names) {
  console.log(`\n=== bench/${name} ===`);
  const run = spawnSync("npx", ["tsx", join(here, name, "index.ts")], { stdio: "inherit" });
  if (run.status !== 0) failed++;
}
// The benchmarks with series redraw their charts as they finish; this redraws all of them once more
// from bench/figures.json, so the charts match the figures even after a failed benchmark.
for (const file of writeCharts()) console.log(`chart: ${file}`);
process.exit(failed === 0 ? 0 : 1);
