import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeValue, MemoryStateStore, RuleEngine, type ThingInfo } from "../../src/engine/index.js";
import type { Rule } from "../../src/rules/index.js";
import { testRule } from "./support.js";

const RESOURCES = ["a", "b", "c"] as const;
const things: ThingInfo[] = ["t1", "t2"].map((thingName) => ({
  thingName,
  thingType: "T",
  domain: "root",
  domains: new Set(["root"]),
  checks: new Map(),
}));

interface RuleSpec {
  items: { resource: (typeof RESOURCES)[number]; value: number }[];
  count: number;
  interval: number;
}

/** The threshold semantics written plainly (docs/engine.md): one count and one firing time per (rule, thing). */
class Oracle {
  private readonly counts = new Map<string, { count: number; lastFiredAt: number }>();

  constructor(private readonly rules: readonly RuleSpec[]) {}

  observe(thing: string, state: Record<string, number>, now: number): string[] {
    const fired: string[] = [];
    this.rules.forEach((r, i) => {
      // An observation that carries none of the rule's resources neither matches nor resets.
      if (!r.items.some((item) => item.resource in state)) return;
      const key = `${thing}/${i}`;
      const entry = this.counts.get(key) ?? { count: 0, lastFiredAt: 0 };
      this.counts.set(key, entry);
      if (!r.items.every((item) => item.resource in state && state[item.resource]! > item.value)) {
        entry.count = 0;
        return;
      }
      entry.count++;
      const intervalMs = r.interval * 1000;
      if (entry.count >= r.count && (entry.lastFiredAt === 0 || now - entry.lastFiredAt >= intervalMs)) {
        entry.count = 0;
        entry.lastFiredAt = intervalMs > 0 ? now : 0;
        fired.push(`r${i}`);
      }
    });
    return fired;
  }

  count(thing: string, rule: number): number {
    return this.counts.get(`${thing}/${rule}`)?.count ?? 0;
  }
}

const ruleSpec = fc.record({
  items: fc.array(fc.record({ resource: fc.constantFrom(...RESOURCES), value: fc.integer({ min: 0, max: 9 }) }), {
    minLength: 1,
    maxLength: 2,
  }),
  count: fc.integer({ min: 1, max: 3 }),
  interval: fc.constantFrom(0, 0, 2),
});
/** A partial report: some of the resources, of one of the two things, some time after the last. */
const observation = fc.record({
  thing: fc.constantFrom("t1", "t2"),
  state: fc.dictionary(fc.constantFrom(...RESOURCES), fc.integer({ min: 0, max: 9 }), { minKeys: 1 }),
  after: fc.constantFrom(0, 500, 1500),
  batchEnd: fc.boolean(),
});

describe("threshold counting against a plain model", () => {
  it("fires the same rules for the same observations and keeps the same counts, however entries are reused", () => {
    fc.assert(
      fc.property(
        fc.array(ruleSpec, { minLength: 1, maxLength: 8 }),
        fc.array(observation, { minLength: 1, maxLength: 60 }),
        (specs, observations) => {
          let now = 1_000_000;
          const engine = new RuleEngine({
            resolveThing: (name) => things.find((t) => t.thingName === name),
            state: new MemoryStateStore(),
            sink: { accept: async () => {} },
            clock: () => now,
          });
          const rules: Rule[] = specs.map((s, i) =>
            testRule(
              `r${i}`,
              s.items.map((item) => ({ operator: "gt" as const, ...item })),
              { filter: { domain: "root", thingType: "T" }, threshold: { count: s.count, interval: s.interval } },
            ),
          );
          expect(engine.load(rules)).toEqual([]);
          const oracle = new Oracle(specs);
          // Observations go to the engine in batches (one clock reading each), as a source hands them over.
          let batch: { thing: string; state: Record<string, number> }[] = [];
          const run = (): void => {
            // Per observation, in batch order; within one, the order the rule set finds its matches in.
            const expected = batch
              .map((o) => oracle.observe(o.thing, o.state, now).map((r) => `${o.thing}:${r}`))
              .filter((fired) => fired.length > 0)
              .map((fired) => fired.sort());
            const work = engine.process(
              batch.map((o) => decodeValue({ thingName: o.thing, timestamp: now, state: o.state }, { source: "test" })),
            );
            const byObservation = new Map<string, string[]>();
            for (const a of work.actions) {
              const id = a.payload.observation.id;
              byObservation.set(id, [...(byObservation.get(id) ?? []), `${a.thingName}:${a.ruleId}`]);
            }
            expect([...byObservation.values()].map((fired) => fired.sort())).toEqual(expected);
            batch = [];
          };
          for (const o of observations) {
            batch.push(o);
            if (o.batchEnd) {
              run();
              now += o.after;
            }
          }
          if (batch.length > 0) run();
          for (const t of things) {
            const live = (engine.thingState(t.thingName)?.thresholds ?? []).filter((e) => e.count > 0);
            const counts = specs.map((_, i) => live.find((e) => e.ruleId === `r${i}`)?.count ?? 0);
            expect(counts).toEqual(specs.map((_, i) => oracle.count(t.thingName, i)));
            // One entry per rule at most: a taken-over entry never leaves a second one behind.
            expect(new Set(live.map((e) => e.ruleId)).size).toBe(live.length);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
