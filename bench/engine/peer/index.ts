/**
 * bench/engine's JVM CEP peer: Esper 9 (GPL-2.0, a benchmark peer only, never shipped) run on the
 * bench's workload in a child JVM. `runPeer` builds the Maven project beside this file once (offline
 * after the first resolve, into a cache named by a hash of the pom and the sources, as scripts/lib.sh
 * caches the service jars), writes the translated rules and the observation bytes to a temp dir, and
 * returns the figures the JVM prints. Alone: `npx tsx bench/engine/peer/index.ts [observations]`.
 */
import { spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { homedir, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Rule } from "../../../src/rules/index.js";
import { translate } from "./translate.js";

const HERE = dirname(fileURLToPath(import.meta.url));
const SOURCES = join(HERE, "src/main/java/dms/peer");
const ESPER_VERSION =
  /<artifactId>esper-runtime<\/artifactId>\s*<version>([^<]+)</.exec(
    readFileSync(join(HERE, "pom.xml"), "utf8"),
  )?.[1] ?? "?";
const CACHE = process.env.ESPER_PEER_CACHE_DIR ?? join(homedir(), ".cache/dms-esper-peer");
/** The peer's heap: 10,000 rules x 1,000 things of a type is up to 10 million pattern partitions. */
const HEAP = process.env.ESPER_PEER_HEAP ?? "6g";

export interface PeerResult {
  observations: number;
  unknown: number;
  seconds: number;
  /** CPU time of the thread that parsed and sent the events (the JIT and GC threads not included). */
  cpuSeconds: number;
  /** The second half of the observations alone (the JIT warm). */
  secondHalfSeconds: number;
  triggered: number;
  secondHalfTriggered: number;
  statements: number;
  distinctStatements: number;
  compileSeconds: number;
  deploySeconds: number;
  heapMiB: number;
  /** Esper's version, from the pom. */
  esper: string;
  java: string;
  /** Seconds the JVM took from spawn to its answer, compile and deploy included. */
  wallSeconds: number;
}

/** Why the peer did not run (no java or mvn, Maven Central refused a jar, the JVM failed), word for word. */
export interface PeerSkipped {
  skipped: string;
}

export interface PeerInput {
  rules: readonly Rule[];
  things: readonly { thingName: string; thingType: string }[];
  /** The n observations, each the exact bytes dms is handed. */
  messages: Iterable<Uint8Array>;
}

export async function runPeer(input: PeerInput): Promise<PeerResult | PeerSkipped> {
  const built = build();
  if ("skipped" in built) return built;
  const dir = mkdtempSync(join(tmpdir(), "dms-esper-peer-"));
  try {
    const specFile = join(dir, "spec.json");
    writeFileSync(specFile, JSON.stringify(translate(input.rules, input.things)));
    const obsFile = join(dir, "observations.jsonl");
    const fd = openSync(obsFile, "w");
    const newline = Buffer.from("\n");
    for (const m of input.messages) {
      writeSync(fd, m);
      writeSync(fd, newline);
    }
    closeSync(fd);
    return await java(built.classpath, specFile, obsFile);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function java(classpath: string, specFile: string, obsFile: string): Promise<PeerResult | PeerSkipped> {
  const t0 = performance.now();
  // ParallelGC: the throughput collector, what a batch benchmark on the JVM would pick.
  const child = spawn(
    "java",
    [`-Xms${HEAP}`, `-Xmx${HEAP}`, "-XX:+UseParallelGC", "-cp", classpath, "dms.peer.EsperPeer", specFile, obsFile],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let out = "";
  let err = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => (err += d.toString()));
  return new Promise((resolve) => {
    child.on("error", (e) => resolve({ skipped: `java: ${e.message}` }));
    child.on("close", (code) => {
      const line = out.trim().split("\n").pop() ?? "";
      if (code !== 0 || !line.startsWith("{")) {
        resolve({ skipped: `the peer JVM exited ${code}: ${tail(err || out)}` });
        return;
      }
      const figures = JSON.parse(line) as Omit<PeerResult, "wallSeconds" | "esper">;
      resolve({ ...figures, esper: ESPER_VERSION, wallSeconds: (performance.now() - t0) / 1000 });
    });
  });
}

/**
 * The compiled classes and the dependency classpath, from the cache when the pom and sources are
 * unchanged. A build goes to a temp dir renamed into place when whole, so an interrupted build or two
 * concurrent first runs never leave half a cache.
 */
function build(): { classpath: string } | PeerSkipped {
  const hash = createHash("sha256");
  hash.update(readFileSync(join(HERE, "pom.xml")));
  for (const f of readdirSync(SOURCES).sort()) hash.update(f).update(readFileSync(join(SOURCES, f)));
  const out = join(CACHE, hash.digest("hex").slice(0, 16));
  const classpath = (): string => `${join(out, "classes")}:${readFileSync(join(out, "classpath.txt"), "utf8").trim()}`;
  if (existsSync(join(out, ".complete"))) return { classpath: classpath() };
  mkdirSync(CACHE, { recursive: true });
  const tmp = mkdtempSync(join(CACHE, ".build-"));
  try {
    const goals = [
      "-q",
      "-B",
      "-f",
      join(HERE, "pom.xml"),
      `-DpeerBuildDir=${tmp}`,
      "compile",
      "dependency:build-classpath",
      `-Dmdep.outputFile=${join(tmp, "classpath.txt")}`,
    ];
    // Offline first: after the first resolve everything is in ~/.m2 and Maven need not ask Central.
    let mvn = spawnSync("mvn", ["-o", ...goals], { encoding: "utf8" });
    if (mvn.error) return { skipped: `mvn: ${mvn.error.message}` };
    if (mvn.status !== 0) mvn = spawnSync("mvn", goals, { encoding: "utf8" });
    if (mvn.status !== 0) return { skipped: `mvn could not build the Esper peer: ${tail(mvn.stdout + mvn.stderr)}` };
    writeFileSync(join(tmp, ".complete"), "");
    try {
      renameSync(tmp, out);
    } catch (e) {
      // Another run finished first: its cache is as good as ours.
      if (!existsSync(join(out, ".complete"))) throw e;
    }
    return { classpath: classpath() };
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

function tail(text: string): string {
  return text.trim().split("\n").slice(-15).join("\n");
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { workload } = await import("../workload.js");
  const n = Number(process.argv[2] ?? 200_000);
  const w = workload();
  const messages = (function* () {
    for (let i = 0; i < n; i++) yield Buffer.from(w.message(i));
  })();
  console.log(JSON.stringify(await runPeer({ rules: w.rules, things: w.things, messages }), null, 2));
}
