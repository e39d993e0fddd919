/**
 * The test tiers. A test file is slow when it needs something outside its own process: a broker
 * (Kafka, Mosquitto), OpenSearch, PostgreSQL, a schema registry or a child process; every other
 * file is fast (`npm run test:fast`), but for the few named in `LONG`. The rule reads each file
 * and the test and bench files it imports, so a new test needs no list kept by hand;
 * test/support/fast-guard.ts makes a fast test that reaches one of them fail, naming this rule.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** What a slow test names: the test support that starts a service, a client of one, a process. */
export const NEEDS_ANOTHER_PROCESS: { what: string; pattern: RegExp }[] = [
  { what: "Kafka", pattern: /support\/kafka\.js|from "kafkajs"|from "@platformatic\/kafka"/ },
  { what: "OpenSearch", pattern: /support\/opensearch\.js/ },
  { what: "PostgreSQL", pattern: /support\/postgres\.js|from "pg"/ },
  { what: "a schema registry", pattern: /support\/schema-registry\.js/ },
  { what: "Mosquitto", pattern: /\b1883\b/ },
  { what: "a child process", pattern: /from "node:child_process"|support\/service-script\.js/ },
  { what: "a browser", pattern: /from "playwright-core"/ },
];

/**
 * Files that need nothing outside their process but take long in it (large generated corpora,
 * property runs, hundreds of thousands of observations, real timers): the slow tier, so the fast
 * one stays within a minute and a half on two idle cores. Each is named with why.
 */
export const LONG: Record<string, string> = {
  "test/observations/find-columns.test.ts": "the differential corpus over stored columns",
  "test/observations/find-columns-vector.test.ts": "the differential corpus both ways, twice",
  "test/observations/find-safety.test.ts": "hostile requests against their time budget",
  "test/jobs/device.test.ts": "job executions through real timers",
  "test/things/fleet.test.ts": "thousands of things and devices",
  "test/observations/partitions.test.ts": "day tables over many days",
  "test/files/list.test.ts": "paging through thousands of files",
  "test/security/openapi-fuzz.test.ts": "generated requests to every operation",
  "test/engine/fast-decode.test.ts": "property runs over generated messages",
  "test/engine/workload.test.ts": "400,000 observations of the bench workload",
  "test/engine/bounded-caches.test.ts": "100,000 distinct rule expressions",
};

const THIS_FILE = fileURLToPath(import.meta.url);
const RELATIVE_IMPORT = /(?:from|import)\s*\(?\s*"(\.{1,2}\/[^"]+)"/g;

/** The project's own test and bench files a file imports (src/ is left out: it starts nothing by being imported). */
function localImports(root: string, file: string): string[] {
  const out: string[] = [];
  for (const [, spec] of readFileSync(file, "utf8").matchAll(RELATIVE_IMPORT)) {
    const target = resolve(dirname(file), spec!.replace(/\.js$/, ".ts"));
    const top = relative(root, target).split("/")[0];
    // This file names every marker, so it is not read as an import of the tiers' own test.
    if ((top === "test" || top === "bench") && target !== THIS_FILE && existsSync(target)) out.push(target);
  }
  return out;
}

/** What a test file needs outside its process, through the files it imports; empty for a fast test. */
export function needs(root: string, file: string): string[] {
  const seen = new Set<string>();
  const found = new Set<string>();
  const visit = (f: string): void => {
    if (seen.has(f)) return;
    seen.add(f);
    const text = readFileSync(f, "utf8");
    for (const { what, pattern } of NEEDS_ANOTHER_PROCESS) if (pattern.test(text)) found.add(what);
    for (const next of localImports(root, f)) visit(next);
  };
  visit(file);
  return [...found];
}

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return testFiles(path);
    return e.name.endsWith(".test.ts") ? [path] : [];
  });
}

/** What marks a test file as starting whole services (`startTestDms`) to test them over REST. */
const STARTS_A_SERVICE = /support\/dms\.js/;
/**
 * What marks a test that reads the service's local storage itself (its SQLite files, its file
 * directory), so it has no PostgreSQL run: the stores' contract suites cover both backends.
 */
const READS_LOCAL_STORAGE = /services\.db\b|stores\.sqlite\b|\.sqlite!|from "better-sqlite3"|"files", "(tmp|objects)"/;

/**
 * The REST-level suite that runs a second time with every store on PostgreSQL (the `rest-postgres`
 * project): the fast tests that start whole services, but for those that read local storage themselves.
 */
export function restSuite(root: string): string[] {
  return tiers(root).fast.filter((path) => {
    const text = readFileSync(join(root, path), "utf8");
    return STARTS_A_SERVICE.test(text) && !READS_LOCAL_STORAGE.test(text);
  });
}

/** The test files of each tier, relative to `root`. */
export function tiers(root: string): { fast: string[]; slow: string[] } {
  const fast: string[] = [];
  const slow: string[] = [];
  for (const file of testFiles(join(root, "test")).sort()) {
    const path = relative(root, file);
    (needs(root, file).length > 0 || path in LONG ? slow : fast).push(path);
  }
  return { fast, slow };
}
