import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Runtimes } from "../../src/engine/runtimes.js";
import { MemoryStateStore, type ThingInfo } from "../../src/engine/index.js";

function runtimes(): Runtimes {
  const checks = new Map<string, (v: unknown) => boolean>();
  const info = (thingName: string): ThingInfo => ({
    thingName,
    thingType: "t",
    domain: "root",
    domains: new Set(["root"]),
    checks,
  });
  return new Runtimes(info, new MemoryStateStore());
}

const names = (list: readonly { state: { thingName: string } }[]): string[] => list.map((rt) => rt.state.thingName);

describe("Runtimes.byName (a checkpoint's order)", () => {
  it("orders things by name over calls that rank new things, take subsets and follow forgotten things", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            seen: fc.uniqueArray(fc.string({ maxLength: 4 }), { maxLength: 30 }),
            forget: fc.array(fc.string({ maxLength: 4 }), { maxLength: 3 }),
          }),
          { maxLength: 8 },
        ),
        (rounds) => {
          const things = runtimes();
          for (const { seen, forget } of rounds) {
            for (const name of forget) things.forget(name);
            // The runtimes as the engine's dirty list holds them: each once, in the order changed.
            const list = seen.map((name) => things.get(name)!);
            const ordered = things.byName(list);
            expect(names(ordered)).toEqual(names(list).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
            expect(new Set(ordered)).toEqual(new Set(list));
          }
        },
      ),
    );
  });

  it("orders things ranked before without a sort by name: a second call of the same things gives the same order", () => {
    const things = runtimes();
    const list = ["b-2", "a-10", "c", "a-9", "b-10"].map((n) => things.get(n)!);
    const first = things.byName(list);
    expect(names(first)).toEqual(["a-10", "a-9", "b-10", "b-2", "c"]);
    expect(first.map((rt) => rt.rank)).toEqual([0, 1, 2, 3, 4]);
    const more = [things.get("b-3")!, ...list.slice(0, 3)];
    expect(names(things.byName(more))).toEqual(["a-10", "b-2", "b-3", "c"]);
    expect(names(things.byName(list.slice(2)))).toEqual(["a-9", "b-10", "c"]);
  });
});
