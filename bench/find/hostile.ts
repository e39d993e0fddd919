/**
 * The hostile phase of bench/find: the engine's observation rate and the
 * latency of `GET /healthz`, first with no FIND traffic and then while 4
 * clients send the worst FIND requests we could build, alternated in one run
 * so that the load of the shared machine falls on both alike.
 */
import { fork, type ChildProcess } from "node:child_process";
import { setPriority } from "node:os";
import { fileURLToPath } from "node:url";
import { setImmediate as yieldToLoop } from "node:timers/promises";
import { decodeValue, type EngineService } from "../../src/engine/index.js";
import type { LoadResult } from "./load.js";

export interface HostileOptions {
  engine: EngineService;
  url: string;
  token: string;
  apiKey: string;
  /** Things the engine stream observes (provisioned). */
  streamThings: readonly string[];
  /** FIND requests, sent in turn by each hostile client. */
  queries: readonly unknown[];
  seconds: number;
  rounds: number;
  clients: number;
}

export interface PhaseFigures {
  engineRate: number;
  healthzMs: number[];
  statuses: Record<string, number>;
  refusals: Record<string, number>;
}

const STREAM_BATCH = 200;

/** Runs `rounds` pairs of (quiet, hostile) phases; answers the figures of each kind, pooled. */
export async function hostilePhases(o: HostileOptions): Promise<{ quiet: PhaseFigures; hostile: PhaseFigures }> {
  const script = fileURLToPath(new URL("./load.ts", import.meta.url));
  const poller = fork(script, { stdio: "inherit" });
  // The hostile clients stand for callers on other machines: on this shared 2-core box they run at
  // the lowest priority, so that their own CPU (parsing megabytes of answers) is not what is measured.
  const attackers = fork(script, { stdio: "inherit" });
  setPriority(attackers.pid!, 19);
  const ask = (child: ChildProcess, poll: boolean, clients: number): Promise<LoadResult> => {
    child.send({
      url: o.url,
      token: o.token,
      apiKey: o.apiKey,
      poll,
      hostileClients: clients,
      seconds: o.seconds,
      queries: o.queries,
    });
    return new Promise((resolve) => child.once("message", (m) => resolve(m as LoadResult)));
  };
  const empty: LoadResult = { healthzMs: [], statuses: {}, refusals: {} };
  const pooled = (): PhaseFigures => ({ engineRate: 0, healthzMs: [], statuses: {}, refusals: {} });
  const quiet = pooled();
  const hostile = pooled();
  let seq = 0;
  try {
    for (let round = 0; round < o.rounds; round++) {
      for (const [figures, clients] of [
        [quiet, 0],
        [hostile, o.clients],
      ] as const) {
        const polled = ask(poller, true, 0);
        const attacked = clients > 0 ? ask(attackers, false, clients) : Promise.resolve(empty);
        const stream = streamFor(o.engine, o.streamThings, o.seconds, seq);
        const [health, attack, streamed] = await Promise.all([polled, attacked, stream]);
        const result: LoadResult = {
          healthzMs: health.healthzMs,
          statuses: attack.statuses,
          refusals: attack.refusals,
        };
        seq += streamed.count;
        figures.engineRate += streamed.rate / o.rounds;
        figures.healthzMs.push(...result.healthzMs);
        for (const [k, v] of Object.entries(result.statuses)) figures.statuses[k] = (figures.statuses[k] ?? 0) + v;
        for (const [k, v] of Object.entries(result.refusals)) figures.refusals[k] = (figures.refusals[k] ?? 0) + v;
        console.error(
          `round ${round + 1}: ${clients ? "hostile" : "quiet"}: engine ${Math.round(streamed.rate)}/s, healthz p99 ${percentile(result.healthzMs, 0.99).toFixed(1)} ms`,
        );
      }
    }
  } finally {
    poller.kill();
    attackers.kill();
  }
  return { quiet, hostile };
}

/** Submits observations to the engine as fast as it takes them for `seconds`; yields to the loop between batches. */
async function streamFor(
  engine: EngineService,
  things: readonly string[],
  seconds: number,
  seq0: number,
): Promise<{ rate: number; count: number }> {
  const start = performance.now();
  const until = start + seconds * 1000;
  let n = 0;
  while (performance.now() < until) {
    const batch = Array.from({ length: STREAM_BATCH }, (_, i) => {
      const k = seq0 + n + i;
      return { thingName: things[k % things.length], timestamp: Date.now(), state: { temp: k % 40 } };
    });
    const result = await engine.accept(batch.map((o) => decodeValue(o, { source: "bench" })));
    n += result.accepted;
    await yieldToLoop();
  }
  return { rate: n / ((performance.now() - start) / 1000), count: n };
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
