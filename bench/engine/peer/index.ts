/**
 * bench/engine's JVM CEP peer: Esper 9 (GPL-2.0, a benchmark peer only, never shipped) run on the
 * bench's workload in a child JVM. `runPeer` builds the Maven project beside this file once
 * (bench/maven.ts), writes the translated rules and the observation bytes to a temp dir, and
 * returns the figures the JVM prints. Alone: `npx tsx bench/engine/peer/index.ts [observations] [formulation]`
 * (formulations.ts: how the rules are deployed; all of them when none is named).
 */
import { spawn } from "node:child_process";
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Rule } from "../../../src/rules/index.js";
import { buildPeer, tail, type PeerSkipped } from "../../maven.js";
import { formulate, FORMULATIONS, type FormulationName } from "./formulations.js";
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
  formulation: FormulationName;
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

export type { PeerSkipped };

export interface PeerInput {
  rules: readonly Rule[];
  things: readonly { thingName: string; thingType: string }[];
  /** The n observations, each the exact bytes dms is handed. */
  messages: Iterable<Uint8Array>;
  /** How the rules are deployed (formulations.ts); one statement per rule by default. */
  formulation?: FormulationName;
}

export async function runPeer(input: PeerInput): Promise<PeerResult | PeerSkipped> {
  const built = buildPeer({ pom: join(HERE, "pom.xml"), sources: [SOURCES], cache: CACHE });
  if ("skipped" in built) return built;
  const dir = mkdtempSync(join(tmpdir(), "dms-esper-peer-"));
  try {
    const specFile = join(dir, "spec.json");
    const formulation = input.formulation ?? "statements";
    const spec = translate(input.rules, input.things);
    writeFileSync(specFile, JSON.stringify({ ...spec, formulation: formulate(spec, formulation) ?? null }));
    const obsFile = join(dir, "observations.jsonl");
    const fd = openSync(obsFile, "w");
    const newline = Buffer.from("\n");
    for (const m of input.messages) {
      writeSync(fd, m);
      writeSync(fd, newline);
    }
    closeSync(fd);
    return await java(built.classpath, specFile, obsFile, formulation);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function java(
  classpath: string,
  specFile: string,
  obsFile: string,
  formulation: FormulationName,
): Promise<PeerResult | PeerSkipped> {
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
      const figures = JSON.parse(line) as Omit<PeerResult, "wallSeconds" | "esper" | "formulation">;
      resolve({ ...figures, formulation, esper: ESPER_VERSION, wallSeconds: (performance.now() - t0) / 1000 });
    });
  });
}

/** The formulations named (every one by default) one after the other on the same observations. */
export async function runFormulations(
  input: Omit<PeerInput, "formulation" | "messages"> & { messages: () => Iterable<Uint8Array> },
  names: readonly FormulationName[] = FORMULATIONS,
): Promise<(PeerResult | (PeerSkipped & { formulation: FormulationName }))[]> {
  const out = [];
  for (const formulation of names) {
    const r = await runPeer({ ...input, messages: input.messages(), formulation });
    out.push("skipped" in r ? { ...r, formulation } : r);
  }
  return out;
}

/** ESPER_FORMULATIONS (comma-separated) or every formulation. */
export function formulationsFromEnv(): FormulationName[] {
  const named = process.env.ESPER_FORMULATIONS?.split(",").filter(Boolean);
  if (!named) return [...FORMULATIONS];
  for (const n of named) if (!(FORMULATIONS as readonly string[]).includes(n)) throw new Error(`no formulation ${n}`);
  return named as FormulationName[];
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { Encoded, memoryEngine, workload } = await import("../workload.js");
  const { decodeMessages } = await import("../../../src/engine/index.js");
  const { peerSection } = await import("./report.js");
  const { loadAverage } = await import("../report.js");
  const n = Number(process.argv[2] ?? 30_000);
  // bench/kafka's workload by default (10,000 things, 10,000 rules), so a short sample still fires.
  const w = workload({ thingsPerType: Number(process.env.ESPER_THINGS_PER_TYPE ?? 100) });
  const data = new Encoded(w, n);
  const load = loadAverage();
  const engine = memoryEngine(w, w.rules);
  let triggered = 0;
  const t0 = performance.now();
  for (let start = 0; start < n; start += 1000)
    triggered += engine.process(decodeMessages(data.chunk(start, start + 1000))).triggered;
  const dms = { observations: n, rate: n / ((performance.now() - t0) / 1000), triggered };
  console.error(`dms: ${Math.round(dms.rate)} obs/s, ${triggered} triggered; load ${load}`);
  const results = await runFormulations(
    { rules: w.rules, things: w.things, messages: () => data.messages(n) },
    formulationsFromEnv(),
  );
  console.log(
    `Load average at the start / at the end: ${load} / ${loadAverage()}. ${fmtWorkload(w.things.length, w.rules.length)}\n`,
  );
  console.log(peerSection(results, dms));
}

function fmtWorkload(things: number, rules: number): string {
  return `Workload: ${things.toLocaleString("en-US")} things, ${rules.toLocaleString("en-US")} rules.`;
}
