import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { compileRule, EvalContext, RuleSet, type CompiledRule } from "../../src/engine/compile/index.js";
import { testRule } from "./support.js";

// A rule set's geofence grid answers from subcells classified at compile time (IN, OUT, or EDGE:
// run the precise test). These properties hold it to the precise test itself, rule by rule, for
// positions on cell and subcell edges, on polygon vertices and edges, at the radius of a POI, and
// around 0 (where coordinates differ from a vertex by subnormal amounts).

const CELL = 0.1;
const SUB = 8;

/** The double next to `x` towards +Infinity (`up`) or -Infinity. */
function nudge(x: number, up: boolean): number {
  if (x === 0) return up ? Number.MIN_VALUE : -Number.MIN_VALUE;
  const buf = new DataView(new ArrayBuffer(8));
  buf.setFloat64(0, x);
  const bits = buf.getBigInt64(0);
  buf.setBigInt64(0, x > 0 === up ? bits + 1n : bits - 1n);
  return buf.getFloat64(0);
}

/** Longitudes (offset 180) or latitudes (offset 90) near `origin`: subcell edges as the grid computes them, an ulp either side, or any double. */
function coordinate(origin: number, span: number, offset: number): fc.Arbitrary<number> {
  const edges = Math.round(span / (CELL / SUB));
  const first = Math.floor(((origin + offset) / CELL) * SUB);
  const edge = fc
    .integer({ min: -edges, max: edges })
    .map((k) => ((first + k - ((first + k) % SUB)) / SUB + ((first + k) % SUB) / SUB) * CELL - offset);
  return fc.oneof(
    edge,
    fc.tuple(edge, fc.boolean()).map(([x, up]) => nudge(x, up)),
    fc.double({ min: origin - span, max: origin + span, noNaN: true }),
  );
}

const ORIGINS: [number, number][] = [
  [10.5, 59.5],
  [0, 0],
  [-179.5, -60],
];

/** Positions the engine reads (readGeoPoint refuses the others). */
const inRange = (p: [number, number]): boolean => p[0] >= -180 && p[0] <= 180 && p[1] >= -90 && p[1] <= 90;

/**
 * The rule set matches what the rules' own tests do at each point of range, with another of the
 * points as the previous position (enter, leave).
 */
function expectAgreement(set: RuleSet, rules: readonly CompiledRule[], points: readonly [number, number][]): void {
  const valid = points.filter(inRange);
  for (let k = 0; k < valid.length; k++) {
    const [grid, precise] = both(set, rules, valid[k]!, valid[(k * 7 + 3) % valid.length]);
    expect(grid).toEqual(precise);
  }
}

/** What the rule set matches for (cur, prev), and what each rule's own test says, in rule order. */
function both(
  set: RuleSet,
  rules: readonly CompiledRule[],
  cur: [number, number],
  prev: [number, number] | undefined,
): [string[], string[]] {
  const ctx = new EvalContext();
  ctx.hasCur = true;
  ctx.cur[0] = cur[0];
  ctx.cur[1] = cur[1];
  ctx.hasPrev = prev !== undefined;
  if (prev) {
    ctx.prev[0] = prev[0];
    ctx.prev[1] = prev[1];
  }
  const out: CompiledRule[] = [];
  const n = set.matches(ctx, out);
  // The set's order: rules found by the position in rule order, then those found by the previous position (leave).
  const precise = rules.filter((r) => r.test(ctx));
  return [
    out.slice(0, n).map((r) => r.id),
    [...precise.filter((r) => r.area !== undefined), ...precise.filter((r) => r.area === undefined)].map((r) => r.id),
  ];
}

describe("the geofence grid answers as the precise test", () => {
  it("for polygons (inside, enter, leave), small ones by subcell and large ones by cell, in rule order", () => {
    const origin = fc.constantFrom(...ORIGINS);
    fc.assert(
      fc.property(
        origin.chain(([lon, lat]) => {
          // 0.3 degrees: up to 7 x 7 cells, placed by subcell; 0.9 degrees: by cell (but not scanned).
          const point = (span: number): fc.Arbitrary<[number, number]> =>
            fc.tuple(coordinate(lon, span, 180), coordinate(lat, span, 90));
          const ring = fc.oneof(
            fc.array(point(0.3), { minLength: 3, maxLength: 25 }),
            fc.array(point(0.9), { minLength: 3, maxLength: 25 }),
          );
          return fc.tuple(
            fc.array(ring, { minLength: 1, maxLength: 3 }),
            fc.array(point(1), { maxLength: 30 }),
            fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 10 }),
          );
        }),
        ([rings, extra, along]) => {
          const rules: CompiledRule[] = [];
          rings.forEach((ring, i) => {
            for (const operator of ["inside", "enter", "leave"] as const) {
              try {
                rules.push(compileRule(testRule(`${operator}${i}`, [{ operator, resource: "latlng", value: ring }])));
              } catch {
                // Fewer than 3 distinct points: refused.
              }
            }
          });
          const set = new RuleSet(rules);
          const points = [...extra];
          for (const ring of rings) {
            for (let k = 0; k < ring.length; k++) {
              const a = ring[k]!;
              const b = ring[(k + 1) % ring.length]!;
              points.push(a);
              for (const t of along) points.push([a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1])]);
            }
          }
          expectAgreement(set, rules, points);
        },
      ),
      { numRuns: 400 },
    );
  });

  it("for POIs (insidePoi, enterPoi, leavePoi), at their radius too", () => {
    // Metres per degree of latitude on turf's sphere.
    const perDegree = (6371008.8 * Math.PI) / 180;
    fc.assert(
      fc.property(
        fc
          .constantFrom(...ORIGINS)
          .chain(([lon, lat]) =>
            fc.tuple(
              fc.tuple(coordinate(lon, 0.3, 180), coordinate(lat, 0.3, 90)),
              fc.oneof(fc.double({ min: 1e-6, max: 1, noNaN: true }), fc.double({ min: 1, max: 40_000, noNaN: true })),
            ),
          ),
        fc.array(fc.tuple(fc.double({ min: -1.5, max: 1.5, noNaN: true }), fc.double({ min: -1.5, max: 1.5 })), {
          maxLength: 30,
        }),
        fc.array(fc.double({ min: 0, max: 2 * Math.PI, noNaN: true }), { maxLength: 10 }),
        ([[lon, lat], radius], offsets, angles) => {
          const value = { center: { lat, lon }, radius };
          const rules = (["insidePoi", "enterPoi", "leavePoi"] as const).map((operator) =>
            compileRule(testRule(operator, [{ operator, resource: "latlng", value }])),
          );
          const set = new RuleSet(rules);
          const deg = radius / perDegree;
          const scale = deg / Math.max(0.05, Math.cos((lat * Math.PI) / 180));
          // Random points around the circle, and points at the radius (and the metre tolerance) in every direction.
          const points: [number, number][] = offsets.map(([dx, dy]) => [lon + dx * scale, lat + dy * deg]);
          for (const a of angles) {
            for (const f of [1, 1 + 1e-3 / radius, 1 + 1e-12, 1 - 1e-12]) {
              points.push([lon + Math.cos(a) * scale * f, lat + Math.sin(a) * deg * f]);
            }
          }
          expectAgreement(set, rules, points);
        },
      ),
      { numRuns: 400 },
    );
  });

  it("a region answers IN or OUT for a cell only where the test gives every point of it that answer", () => {
    const origin = fc.constantFrom(...ORIGINS);
    const unit = fc.double({ min: 0, max: 1, noNaN: true });
    fc.assert(
      fc.property(
        origin.chain(([lon, lat]) => {
          const point = fc.tuple(coordinate(lon, 0.3, 180), coordinate(lat, 0.3, 90));
          return fc.tuple(
            fc.array(point, { minLength: 3, maxLength: 25 }),
            point,
            fc.double({ min: 1e-9, max: 0.1, noNaN: true }),
            fc.integer({ min: 1, max: 6 }),
            fc.array(fc.tuple(unit, unit), { minLength: 1, maxLength: 40 }),
          );
        }),
        ([ring, [lon0, lat0], size, n, at]) => {
          let compiled: CompiledRule;
          try {
            compiled = compileRule(testRule("r", [{ operator: "inside", resource: "latlng", value: ring }]));
          } catch {
            return;
          }
          const cells = compiled.area!.grid(lon0, lat0, size, size, n, n);
          const ctx = new EvalContext();
          ctx.hasCur = true;
          // Corners and random points of the whole grid, each checked against its cell's answer.
          for (const [s, t] of [[0, 0], [1, 1], [0, 1], [1, 0], ...at] as [number, number][]) {
            const i = Math.min(n - 1, Math.floor(s * n));
            const j = Math.min(n - 1, Math.floor(t * n));
            const answer = cells[i + j * n]!;
            if (answer === 2) continue;
            ctx.cur[0] = lon0 + s * n * size;
            ctx.cur[1] = lat0 + t * n * size;
            expect(compiled.test(ctx)).toBe(answer === 1);
          }
        },
      ),
      { numRuns: 1000 },
    );
  });

  it("where a vertex sits a subnormal amount off a position's latitude, as the precise test's rounding has it", () => {
    // The edge from (0.3, -m) to (0.4, m) passes 0.3 degrees from (0, 0), but the products of its
    // differences from (0, 0) underflow to 0, so the precise test finds (0, 0) on it: inside, though
    // the polygon (a strip and a band above) lies 0.3 degrees away. Large (placed by cell) and small.
    const m = Number.MIN_VALUE;
    for (const k of [1, 0.1]) {
      const ring: [number, number][] = [
        [0.3 * k, -m],
        [0.4 * k, m],
        [0.4 * k, k],
        [-k, k],
        [-k, 0.5 * k],
        [0.3 * k, 0.5 * k],
      ];
      const inside = compileRule(testRule("inside", [{ operator: "inside", resource: "latlng", value: ring }]));
      const [grid, precise] = both(new RuleSet([inside]), [inside], [0, 0], undefined);
      expect(precise).toEqual(["inside"]);
      expect(grid).toEqual(precise);
    }
  });

  it("rules over hundreds of thousands of cells: the grid is built (its extent found by a loop) and answers", () => {
    // 400 squares of 1.9 x 1.9 degrees (400 cells each) on a 2-degree lattice: 160,000 cells in use.
    const rules: CompiledRule[] = [];
    for (let i = 0; i < 400; i++) {
      const lon = -170 + (i % 40) * 2;
      const lat = -60 + Math.floor(i / 40) * 2;
      const ring: [number, number][] = [
        [lon, lat],
        [lon + 1.9, lat],
        [lon + 1.9, lat + 1.9],
        [lon, lat + 1.9],
        [lon, lat],
      ];
      rules.push(compileRule(testRule(`sq${i}`, [{ operator: "inside", resource: "latlng", value: ring }])));
    }
    const set = new RuleSet(rules);
    for (const at of [
      [-169, -59],
      [-91.05, -41.95],
      [-89.05, -40],
    ] as [number, number][]) {
      const [grid, precise] = both(set, rules, at, undefined);
      expect(grid).toEqual(precise);
    }
    expect(both(set, rules, [-169, -59], undefined)[0]).toEqual(["sq0"]);
  });
});
