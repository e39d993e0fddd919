import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isLive, type ThresholdState } from "../../src/engine/state/index.js";
import { RuleIndex } from "../../src/engine/rule-index.js";
import { EntryPool, type Block } from "../../src/engine/threshold-pool.js";
import { Thresholds } from "../../src/engine/thresholds.js";

/** An entry in the object form, as a store reads it: lastSeq and version may be absent (older documents). */
const entry: fc.Arbitrary<ThresholdState> = fc
  .record({
    ruleId: fc.constantFrom("r0", "r1", "r2", "r3", "r4", "x"),
    count: fc.constantFrom(0, 0, 1, 2, 7),
    lastFiredAt: fc.constantFrom(0, 0, 1_700_000_000_123),
    lastSeq: fc.option(fc.integer({ min: -1, max: 2 ** 40 }), { nil: undefined }),
    version: fc.option(fc.integer({ min: 0, max: 2 ** 32 - 1 }), { nil: undefined }),
  })
  .map((e) => {
    const t: ThresholdState = { ruleId: e.ruleId, count: e.count, lastFiredAt: e.lastFiredAt };
    if (e.lastSeq !== undefined) t.lastSeq = e.lastSeq;
    if (e.version !== undefined) t.version = e.version;
    return t;
  });
/** One rule id per entry, as a thing's list has. */
const list = fc.uniqueArray(entry, { selector: (e) => e.ruleId, maxLength: 6 });

const op = fc.oneof(
  fc.record({ kind: fc.constant("adopt" as const), thing: fc.nat(7), list: fc.option(list, { nil: undefined }) }),
  fc.record({ kind: fc.constant("drop" as const), thing: fc.nat(7), ruleId: fc.constantFrom("r0", "r1", "x") }),
  fc.record({ kind: fc.constant("release" as const), thing: fc.nat(7) }),
);

describe("threshold entries in the pool", () => {
  it("are what was taken in, for every thing, over blocks freed and taken again across small chunks", () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
        // Chunks of 8 entries: blocks fill chunks, leave their tails to the free lists, and are reused.
        const rules = new RuleIndex(undefined, undefined);
        const thresholds = new Thresholds(rules, new EntryPool(8));
        const blocks: Block[] = Array.from({ length: 8 }, () => ({ tk: 0, tb: 0, tc: 0, tn: 0 }));
        const model: (ThresholdState[] | undefined)[] = new Array<ThresholdState[] | undefined>(8).fill(undefined);
        for (const o of ops) {
          const b = blocks[o.thing]!;
          if (o.kind === "adopt") {
            thresholds.release(b);
            expect(thresholds.adopt(b, o.list)).toBe(o.list?.length ?? 0);
            model[o.thing] = o.list?.map((e) => ({ ...e }));
          } else if (o.kind === "drop") {
            const m = model[o.thing];
            const i = m?.findIndex((e) => e.ruleId === o.ruleId) ?? -1;
            if (i >= 0) m!.splice(i, 1);
            expect(thresholds.drop(b, rules.slotOf(o.ruleId))).toBe(i >= 0);
          } else {
            thresholds.release(b);
            model[o.thing] = undefined;
          }
          // Every thing's entries, not only the one changed: a block handed out twice would show here.
          blocks.forEach((other, t) => {
            expect(thresholds.entries(other, true)).toEqual(model[t]);
            const live = model[t]?.filter(isLive);
            expect(thresholds.entries(other, false)).toEqual(live?.length ? live : undefined);
          });
        }
      }),
      { numRuns: 300 },
    );
  });
});
