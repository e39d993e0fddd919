/**
 * The hostile phase of bench/find: the engine's observation rate and the
 * latency of `GET /healthz`, first with no FIND traffic and then while 4
 * clients send the worst FIND requests we could build, alternated in one run
 * so that the load of the shared machine falls on both alike.
 *
 * The engine is fed as in production: the service consumes its observations
 * from a Kafka topic, and a producer in a process of its own (producer.ts)
 * writes to it, at a fixed, realistic rate (the /healthz figure: what a
 * caller sees while the service does its ordinary work) and at the maximum
 * rate (the engine's capacity, with and without the hostile clients).
 */
import { fork, type ChildProcess } from "node:child_process";
import { setPriority } from "node:os";
import { readFileSync, writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import type { LoadResult, Queries } from "./load.js";
import type { ProduceJob, ProduceResult } from "./producer.js";

export interface HostileOptions {
  /** What the engine has evaluated so far (its `dms_engine_observations_total`). */
  evaluated: () => Promise<number>;
  url: string;
  token: string;
  apiKey: string;
  /** Where the service consumes its observations. */
  brokers: string;
  topic: string;
  /** Things the producer observes (provisioned). */
  streamThings: readonly string[];
  /** FIND requests, sent in turn by each hostile client. */
  queries: readonly unknown[];
  seconds: number;
  rounds: number;
  clients: number;
  /** Observations a second of the fixed-rate feed. */
  rate: number;
}

export interface PhaseFigures {
  /** Observations a second the engine evaluated, mean of the rounds. */
  engineRate: number;
  /** Observations a second the producer wrote, mean of the rounds. */
  producedRate: number;
  healthzMs: number[];
  /** The service's event-loop delay (perf_hooks.monitorEventLoopDelay), worst p99 and max of the rounds. */
  loopDelayP99Ms: number;
  loopDelayMaxMs: number;
  /**
   * CPU the service's thread used, as a share of the phase's wall time (mean of
   * the rounds): unlike latencies, not inflated when other work on the shared
   * machine keeps the process waiting for a core.
   */
  threadCpu: number;
  statuses: Record<string, number>;
  refusals: Record<string, number>;
}

/** Both kinds of phase, at one feed rate. */
export interface FeedFigures {
  quiet: PhaseFigures;
  hostile: PhaseFigures;
}

/**
 * Runs, for the fixed rate and then the maximum rate, `rounds` pairs of
 * (quiet, hostile) phases; answers the figures of each kind, pooled.
 */
export async function hostilePhases(o: HostileOptions): Promise<{ fixed: FeedFigures; max: FeedFigures }> {
  const here = (file: string): string => fileURLToPath(new URL(file, import.meta.url));
  const poller = fork(here("./load.ts"), { stdio: "inherit" });
  // The hostile clients stand for callers on other machines: on this shared 2-core box they run at
  // the lowest priority, so that their own CPU (parsing megabytes of answers) is not what is measured.
  const attackers = fork(here("./load.ts"), { stdio: "inherit" });
  setPriority(attackers.pid!, 19);
  attackers.send({ queries: o.queries } satisfies Queries);
  const producer = fork(here("./producer.ts"), { stdio: "inherit" });
  const ask = <T>(child: ChildProcess, job: unknown): Promise<T> => {
    child.send(job as object);
    return new Promise((resolve) => child.once("message", (m) => resolve(m as T)));
  };
  const load = (child: ChildProcess, poll: boolean, clients: number): Promise<LoadResult> =>
    ask(child, {
      url: o.url,
      token: o.token,
      apiKey: o.apiKey,
      poll,
      hostileClients: clients,
      seconds: o.seconds,
    });
  const empty: LoadResult = { healthzMs: [], statuses: {}, refusals: {} };
  let seq = 0;
  const feed = async (rate: number): Promise<FeedFigures> => {
    const pooled = (): PhaseFigures => ({
      engineRate: 0,
      producedRate: 0,
      healthzMs: [],
      loopDelayP99Ms: 0,
      loopDelayMaxMs: 0,
      threadCpu: 0,
      statuses: {},
      refusals: {},
    });
    const figures = { quiet: pooled(), hostile: pooled() };
    for (let round = 0; round < o.rounds; round++) {
      for (const kind of ["quiet", "hostile"] as const) {
        const f = figures[kind];
        const loop = monitorEventLoopDelay({ resolution: 10 });
        loop.enable();
        const profile = await profiling(`${rate > 0 ? `fixed-${rate}` : "max"}-${round + 1}-${kind}`);
        const before = await o.evaluated();
        const cpuBefore = threadCpuMs();
        const job: ProduceJob = {
          brokers: o.brokers,
          topic: o.topic,
          things: [...o.streamThings],
          rate,
          seconds: o.seconds,
          seq,
        };
        // Counted at the end of the phase's window: the hostile clients' last requests may run past it.
        const atEnd = new Promise((r) => setTimeout(r, o.seconds * 1000)).then(() => o.evaluated());
        const [health, attack, produced, after] = await Promise.all([
          load(poller, true, 0),
          kind === "hostile" ? load(attackers, false, o.clients) : Promise.resolve(empty),
          ask<ProduceResult>(producer, job),
          atEnd,
        ]);
        const engineRate = (after - before) / o.seconds;
        const cpu = (threadCpuMs() - cpuBefore) / (o.seconds * 1000);
        loop.disable();
        await profile();
        seq += produced.produced;
        f.engineRate += engineRate / o.rounds;
        f.producedRate += produced.produced / o.seconds / o.rounds;
        f.healthzMs.push(...health.healthzMs);
        f.threadCpu += cpu / o.rounds;
        f.loopDelayP99Ms = Math.max(f.loopDelayP99Ms, loop.percentile(99) / 1e6);
        f.loopDelayMaxMs = Math.max(f.loopDelayMaxMs, loop.max / 1e6);
        for (const [k, v] of Object.entries(attack.statuses)) f.statuses[k] = (f.statuses[k] ?? 0) + v;
        for (const [k, v] of Object.entries(attack.refusals)) f.refusals[k] = (f.refusals[k] ?? 0) + v;
        console.error(
          `${rate > 0 ? `${rate}/s` : "max rate"}, round ${round + 1}, ${kind}: produced ${Math.round(produced.produced / o.seconds)}/s, engine ${Math.round(engineRate)}/s, healthz p99 ${percentile(health.healthzMs, 0.99).toFixed(1)} ms, loop delay p99 ${(loop.percentile(99) / 1e6).toFixed(1)} ms max ${(loop.max / 1e6).toFixed(1)} ms, thread CPU ${Math.round(cpu * 100)}%`,
        );
      }
    }
    return figures;
  };
  try {
    // Untimed: the consumer's first fetches (and the producer's connection) start before the first phase.
    const warmUp = await ask<ProduceResult>(producer, {
      brokers: o.brokers,
      topic: o.topic,
      things: [...o.streamThings],
      rate: o.rate,
      seconds: 3,
      seq,
    } satisfies ProduceJob);
    seq += warmUp.produced;
    const deadline = performance.now() + 60_000;
    while ((await o.evaluated()) < seq && performance.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    const fixed = await feed(o.rate);
    const max = await feed(0);
    return { fixed, max };
  } finally {
    poller.kill();
    attackers.kill();
    producer.send("close");
  }
}

/**
 * With BENCH_FIND_CPU_PROFILE=<dir>, a CPU profile of the service's thread
 * for the phase (`<dir>/<phase>.cpuprofile`, for Chrome DevTools or
 * bench/find/long-tasks.ts); answers the function that stops and writes it.
 */
async function profiling(phase: string): Promise<() => Promise<void>> {
  const dir = process.env.BENCH_FIND_CPU_PROFILE;
  if (!dir) return async () => {};
  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.setSamplingInterval", { interval: 1000 });
  await session.post("Profiler.start");
  return async () => {
    const { profile } = await session.post("Profiler.stop");
    writeFileSync(join(dir, `${phase}.cpuprofile`), JSON.stringify(profile));
    session.disconnect();
  };
}

/**
 * CPU milliseconds of this process's main thread (the service's event loop),
 * from /proc (Linux; 0 elsewhere): utime and stime of the task whose id is the pid.
 */
function threadCpuMs(): number {
  try {
    const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // Fields 14 and 15 of stat(5), counted from the state (field 3) here; in clock ticks of 10 ms.
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return 0;
  }
}

export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return NaN;
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

/**
 * The worst requests we could build within the limits, over `from`..`to`:
 * each makes RE2 work on every candidate (a V8 RegExp would backtrack for
 * minutes on each), or reads as much as a query may, or both.
 */
export function worstQueries(from: string, to: string, names: readonly string[]): unknown[] {
  const range = { range: { timestamp: { gte: from, lt: to } } };
  // 1,023 and the range: as many clauses as one bool may hold.
  const patterns = Array.from({ length: 1023 }, (_, i) => ({ wildcard: { "state.latlng": `*9*9*9*9*${i}*b` } }));
  let nested: Record<string, unknown> = { terms: { field: "state.latlng", include: "(5+)+b" } };
  for (let i = 0; i < 9; i++) nested = { terms: { field: "state.latlng", include: "(5+)+b" }, aggs: { n: nested } };
  return [
    { size: 0, query: { bool: { filter: [range], should: patterns } } },
    { size: 10_000, query: range, _source: ["state.*a*a*a*a*b", "*9*9*9*9*b"] },
    { size: 0, query: range, aggs: { n: nested } },
    { size: 0, query: range, aggs: { f: { filters: { filters: patterns.slice(0, 200) } } } },
    {
      size: 100,
      query: { bool: { filter: [range, { terms: { thingName: names } }, { regexp: { "state.latlng": "(5+)+b" } }] } },
    },
  ];
}
