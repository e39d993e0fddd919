/**
 * `npm run bench`: runs every benchmark (`bench/<name>/index.ts`) one after
 * another, so they never compete for the machine's cores.
 * `npm run bench -- engine proxy` runs only those.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

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
process.exit(failed === 0 ? 0 : 1);
