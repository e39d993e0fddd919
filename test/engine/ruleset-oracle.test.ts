import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { ExpressionItem } from "../../src/rules/index.js";
import { compileRule, EvalContext, RuleSet, type CompiledRule } from "../../src/engine/compile/index.js";
import { testRule } from "./support.js";

// A rule set finds rules through a per-set glance at its constants, sorted constants, string maps,
// two geofence grids (a bit per subcell, one code per list, lists merged with rules placed by
// cell) and a scan. Whatever the route, it must match exactly the rules whose own test holds: the
// plain scan of every rule is the oracle, over random rules of every operator and random
// observations (values at and next to the constants, positions on cell and subcell edges, near the
// geofences and outside every grid).

const RESOURCES = ["a", "b", "c"] as const;
const CONSTANTS = [-1, 0, 0.5, 3, 7, 10] as const;
const STRINGS = ["x", "y", "true", "false", "3"] as const;
/** The workload's corner of the map, and one at 0, where a cell's edge is a degree's. */
const ORIGINS: [number, number][] = [
  [10.5, 59.5],
  [0, 0],
];
const CELL = 0.1;
const SUB = 8;

const constant: fc.Arbitrary<number | string> = fc.oneof(fc.constantFrom(...CONSTANTS), fc.constantFrom(...STRINGS));

function valueItem(): fc.Arbitrary<ExpressionItem> {
  return fc.record({
    operator: fc.constantFrom("gt", "gte", "lt", "lte", "eq", "ne"),
    resource: fc.constantFrom(...RESOURCES),
    value: fc.oneof(constant, constant, fc.constantFrom("${thing.state.a + 1}", "${observation.b}")),
  }) as fc.Arbitrary<ExpressionItem>;
}

/** A polygon of 3-8 corners within `span` degrees of `origin`, or a POI there, under a geofence operator. */
function geoItem([lon, lat]: [number, number]): fc.Arbitrary<ExpressionItem> {
  const point = (span: number): fc.Arbitrary<[number, number]> =>
    fc.tuple(
      fc.double({ min: lon - span, max: lon + span, noNaN: true }),
      fc.double({ min: lat - span, max: lat + span, noNaN: true }),
    );
  // 0.15 degrees: a few cells, placed by subcell; 0.8 degrees: over 16 cells, placed by cell.
  const polygon = fc.oneof(
    fc.array(point(0.15), { minLength: 3, maxLength: 8 }),
    fc.array(point(0.8), { minLength: 3, maxLength: 8 }),
  );
  const poi = fc
    .tuple(point(0.3), fc.double({ min: 100, max: 60_000, noNaN: true }))
    .map(([[plon, plat], radius]) => ({ center: { lat: plat, lon: plon }, radius }));
  return fc.oneof(
    fc.record({
      operator: fc.constantFrom("inside", "outside", "enter", "leave"),
      resource: fc.constant("latlng"),
      value: polygon,
    }),
    fc.record({
      operator: fc.constantFrom("insidePoi", "outsidePoi", "enterPoi", "leavePoi"),
      resource: fc.constant("latlng"),
      value: poi,
    }),
  ) as fc.Arbitrary<ExpressionItem>;
}

/** A position near `origin`: on a subcell edge, an ulp off one, or anywhere (some outside every grid). */
function position([lon, lat]: [number, number]): fc.Arbitrary<[number, number]> {
  const step = CELL / SUB;
  const edge = (origin: number, offset: number): fc.Arbitrary<number> =>
    fc
      .integer({ min: -100, max: 100 })
      .map((k) => (Math.floor((origin + offset) / step) + k) * step - offset)
      .chain((x) => fc.constantFrom(x, x + Number.EPSILON * Math.abs(x || 1), x - Number.EPSILON * Math.abs(x || 1)));
  const coordinate = (origin: number, offset: number, span: number): fc.Arbitrary<number> =>
    fc.oneof(edge(origin, offset), fc.double({ min: origin - span, max: origin + span, noNaN: true }));
  return fc.tuple(coordinate(lon, 180, 2), coordinate(lat, 90, 2));
}

const observedValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(...CONSTANTS),
  fc.constantFrom(...CONSTANTS).map((c) => c + 1e-9),
  fc.constantFrom(...CONSTANTS).map((c) => c - 1e-9),
  fc.double({ min: -20, max: 20, noNaN: true }),
  fc.constantFrom(...STRINGS),
  fc.boolean(),
  fc.constant(undefined),
);

const state: fc.Arbitrary<Record<string, unknown>> = fc
  .tuple(observedValue, observedValue, observedValue)
  .map((values) => {
    const s: Record<string, unknown> = {};
    values.forEach((v, i) => {
      if (v !== undefined) s[RESOURCES[i]!] = v;
    });
    return s;
  });

describe("a rule set matches what a plain scan of its rules' tests matches", () => {
  it("over random rules of every operator and random observations", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...ORIGINS).chain((origin) =>
          fc.tuple(
            fc.array(
              fc.array(fc.oneof({ weight: 3, arbitrary: valueItem() }, { weight: 2, arbitrary: geoItem(origin) }), {
                minLength: 1,
                maxLength: 3,
              }),
              { minLength: 1, maxLength: 40 },
            ),
            fc.array(
              fc.record({
                os: state,
                ts: state,
                cur: fc.option(position(origin), { nil: undefined }),
                prev: fc.option(position(origin), { nil: undefined }),
              }),
              { minLength: 1, maxLength: 30 },
            ),
          ),
        ),
        ([expressions, observations]) => {
          const rules: CompiledRule[] = [];
          expressions.forEach((expression, i) => {
            try {
              rules.push(compileRule(testRule(`r${i}`, expression)));
            } catch {
              // A polygon of fewer than 3 distinct corners: refused.
            }
          });
          const set = new RuleSet(rules);
          const ctx = new EvalContext();
          const out: CompiledRule[] = [];
          for (const o of observations) {
            ctx.os = o.os;
            ctx.ts = o.ts;
            ctx.hasCur = o.cur !== undefined;
            if (o.cur) [ctx.cur[0], ctx.cur[1]] = o.cur;
            ctx.hasPrev = o.prev !== undefined;
            if (o.prev) [ctx.prev[0], ctx.prev[1]] = o.prev;
            const n = set.matches(ctx, out);
            const found = out.slice(0, n).map((r) => r.id);
            expect(new Set(found).size).toBe(found.length);
            expect(found.sort()).toEqual(
              rules
                .filter((r) => r.test(ctx))
                .map((r) => r.id)
                .sort(),
            );
          }
        },
      ),
      { numRuns: 500 },
    );
  });
});
