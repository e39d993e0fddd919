import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { stateDoc } from "../../src/engine/state/doc.js";
import type { ThingState, ThresholdState } from "../../src/engine/index.js";

/** The document as one JSON.stringify of it makes it: what the hand-written JSON must equal. */
function stringified(t: ThingState): string {
  const doc: { state: unknown; nested?: unknown; thresholds?: unknown[] } = { state: t.state };
  if (t.nested) doc.nested = t.nested;
  const flat = (t.thresholds ?? [])
    .filter((e) => e.count > 0 || e.lastFiredAt !== 0)
    .flatMap((e) => [e.ruleId, e.count, e.lastFiredAt, e.lastSeq ?? null, e.version ?? null]);
  if (flat.length > 0) doc.thresholds = flat;
  return JSON.stringify(doc);
}

const entry: fc.Arbitrary<ThresholdState> = fc.record(
  {
    ruleId: fc.string(),
    count: fc.nat(),
    lastFiredAt: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 4_000_000_000_000 })),
    lastSeq: fc.nat(),
    version: fc.nat(),
  },
  { requiredKeys: ["ruleId", "count", "lastFiredAt"] },
);

describe("a thing's state row document", () => {
  it("is the JSON of {state, nested?, thresholds?} with the live entries flat, whatever the rule ids hold", () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.string(), fc.jsonValue()),
        fc.option(
          fc.array(fc.record({ type: fc.string(), id: fc.string(), state: fc.dictionary(fc.string(), fc.integer()) })),
          { nil: undefined },
        ),
        fc.option(fc.array(entry), { nil: undefined }),
        (state, nested, thresholds) => {
          const t: ThingState = { thingName: "t", timestamp: 1, state, seq: 1 };
          if (nested) t.nested = nested;
          if (thresholds) t.thresholds = thresholds;
          expect(stateDoc(t)).toBe(stringified(t));
        },
      ),
    );
  });
});
