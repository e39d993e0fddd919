import { describe, expect, it } from "vitest";
import { accessor, type Doc } from "../../src/observations/find/fields.js";
import { compileSort } from "../../src/observations/find/hits.js";

/**
 * A document's array past what a call's arguments hold (~120,000 values): FIND reads it by loops.
 * Spread into Math.min/max or push, it threw RangeError (eslint's no-restricted-syntax now refuses
 * that spread anywhere in src/).
 */
const many = Array.from({ length: 200_000 }, (_, i) => 1_000 + i);
const doc = (source: Record<string, unknown>): Doc => ({ id: 1, source, thingType: "10", score: 0 });

describe("large arrays in documents", () => {
  it("sort by their min and max", () => {
    const d = doc({ state: { vals: many } });
    expect(compileSort({ "state.vals": { order: "asc", mode: "min" } })!.values(d)).toEqual([1_000]);
    expect(compileSort({ "state.vals": { order: "desc", mode: "max" } })!.values(d)).toEqual([200_999]);
  });

  it("are flattened along a path of three keys", () => {
    const d = doc({ state: { nested: [{ v: many }, { v: [7] }] } });
    const values = accessor("state.nested.v")(d);
    expect(values).toHaveLength(200_001);
    expect(values[200_000]).toBe(7);
  });
});
