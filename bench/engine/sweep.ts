/**
 * The engine's rate against the number of rules per thing type (bench/engine, the chart
 * bench/charts/engine-rules.svg): the same observations through engines loaded with 10 to 1,000
 * rules per type, each interleaved chunk by chunk with JSON.parse alone so both see the same load.
 */
import { performance } from "node:perf_hooks";
import { decodeMessages, MemoryStateStore, RuleEngine, type RawObservation } from "../../src/engine/index.js";
import { thingResolver, workload, WORKLOAD_EPOCH_MS } from "./workload.js";

export const RULES_PER_TYPE_SWEEP = [10, 30, 100, 300, 1000];

export interface SweepPoint {
  rulesPerType: number;
  rules: number;
  observations: number;
  /** Engine observations/s. */
  rate: number;
  /** JSON.parse alone on the same chunks, interleaved. */
  decodeRate: number;
  matchesPerObservation: number;
  triggered: number;
}

export function sweepRules(
  chunk: (start: number, end: number) => RawObservation[],
  n: number,
  chunkSize: number,
  counts: readonly number[] = RULES_PER_TYPE_SWEEP,
): SweepPoint[] {
  return counts.map((rulesPerType) => {
    const w = workload({ rulesPerType });
    const engine = new RuleEngine({
      resolveThing: thingResolver(w.things),
      state: new MemoryStateStore(),
      sink: { accept: async () => {} },
      clock: () => WORKLOAD_EPOCH_MS,
    });
    engine.load(w.rules);
    let engineMs = 0;
    let decodeMs = 0;
    let matched = 0;
    let triggered = 0;
    let parsed = 0;
    for (let start = 0; start < n; start += chunkSize) {
      const raws = chunk(start, Math.min(n, start + chunkSize));
      const t0 = performance.now();
      for (const raw of raws)
        if ((JSON.parse((raw.value as Buffer).toString("utf8")) as { state?: object }).state) parsed++;
      const t1 = performance.now();
      const work = engine.process(decodeMessages(raws));
      engineMs += performance.now() - t1;
      decodeMs += t1 - t0;
      matched += work.matched;
      triggered += work.triggered;
    }
    if (parsed !== n) throw new Error(`decode-only parsed ${parsed} of ${n}`);
    return {
      rulesPerType,
      rules: w.rules.length,
      observations: n,
      rate: n / (engineMs / 1000),
      decodeRate: n / (decodeMs / 1000),
      matchesPerObservation: matched / n,
      triggered,
    };
  });
}
