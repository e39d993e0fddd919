/**
 * Memory over a stream of distinct dry runs: 100,000 `POST /rules/test` bodies (the service's
 * RulesService.test, validation included, without HTTP), each with a comparison and an action
 * template whose `${}` are near the longest allowed and unique, so that every one compiles new
 * code. Prints RSS, heap after GC and the caches' entries and estimated bytes every 10,000. With
 * every cache bounded by entries and bytes (docs/engine.md, "Caches") RSS levels off after the
 * warm-up. Rerun: `npx tsx bench/caches/index.ts` (BENCH_CACHES_TOTAL=100000, BENCH_CACHES_LENGTH=200).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { templateCacheSize } from "../../src/actions/index.js";
import { loadConfig } from "../../src/config/index.js";
import { generatedCacheSize } from "../../src/engine/index.js";
import { startDms } from "../../src/service.js";
import { fullGc } from "../gc.js";
import { distinctDryRun } from "./workload.js";

const TOTAL = Number(process.env.BENCH_CACHES_TOTAL ?? 100_000);
/** Characters of each dry run's comparison expression (its template's is half as long). */
const LENGTH = Number(process.env.BENCH_CACHES_LENGTH ?? 200);
const MB = 1024 * 1024;

console.log(
  `machine: ${cpus()[0]?.model}, ${cpus().length} cores, Node ${process.version}, ${new Date().toISOString()}`,
);
console.log(
  `load average at start: ${loadavg()
    .map((l) => l.toFixed(1))
    .join(" ")}`,
);

const dataDir = mkdtempSync(join(tmpdir(), "dms-bench-caches-"));
const provision = join(dataDir, "provision.json");
writeFileSync(
  provision,
  JSON.stringify({
    domains: [{ id: "root" }, { id: "acme", parent: "root" }],
    users: [
      { userName: "alice", password: "alice-pw", role: "ReadWrite", homeDomain: "acme", privileges: { acme: ["*.*"] } },
    ],
    thingTypes: [
      {
        id: "10",
        label: "Tracker",
        domain: "acme",
        resources: [{ name: "temp", dataType: "long", resourceType: "thing" }],
      },
    ],
    things: [{ thingName: "t1", thingType: "10", domain: "acme" }],
  }),
);
const dms = await startDms(
  loadConfig({
    DMS_DATA_DIR: dataDir,
    DMS_PROVISION: provision,
    DMS_LOG_LEVEL: "silent",
    DMS_ROLES: "api",
    DMS_HTTP_PORT: "0",
    DMS_HTTP_HOST: "127.0.0.1",
    DMS_JWT_SECRET: "bench-secret-bench-secret-bench-secret",
  }),
);
const alice = dms.services.identity.principal("alice")!;

console.log(
  "| dry runs | RSS MB | heap after GC MB | generated cache (entries, est. MB) | template cache (entries, est. MB) |",
);
console.log("| --- | --- | --- | --- | --- |");
const cached = ({ entries, bytes }: { entries: number; bytes: number }): string =>
  `${entries}, ${(bytes / MB).toFixed(1)}`;
try {
  for (let i = 1; i <= TOTAL; i++) {
    const { body, observations } = distinctDryRun(i, LENGTH);
    const report = dms.services.rules.test(alice, body, observations);
    if (report.triggeredCount !== 1) throw new Error(`dry run ${i} did not trigger`);
    if (i % 10_000 === 0) {
      fullGc();
      const m = process.memoryUsage();
      console.log(
        `| ${i} | ${(m.rss / MB).toFixed(0)} | ${(m.heapUsed / MB).toFixed(1)} | ${cached(generatedCacheSize())} | ${cached(templateCacheSize())} |`,
      );
    }
  }
} finally {
  await dms.close();
  rmSync(dataDir, { recursive: true, force: true });
}
