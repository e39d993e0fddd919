import { booleanPointInPolygon } from "@turf/boolean-point-in-polygon";
import { polygon as turfPolygon } from "@turf/helpers";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { rng } from "../../bench/engine/workload.js";
import { compileRule, evaluateRule, readGeoPoint, RuleCompileError } from "../../src/engine/index.js";
import type { ExpressionItem, Rule } from "../../src/rules/index.js";
import { testRule } from "./support.js";

function rule(expression: ExpressionItem[]): Rule {
  return testRule("r1", expression, { name: "r", actions: [] });
}

type State = Record<string, unknown>;
function matches(
  item: ExpressionItem,
  state: State,
  previous: State = {},
  nested?: { type?: string; id?: string; state: State }[],
): boolean {
  const observation = nested ? { state, nested } : { state };
  return evaluateRule(compileRule(rule([item])), { observation, thing: { state: previous } }).matched;
}

describe("value operators compare on both sides of their boundary", () => {
  const cases: [ExpressionItem["operator"], number, boolean, boolean, boolean][] = [
    // operator, constant, below, at, above
    ["gt", 10, false, false, true],
    ["gte", 10, false, true, true],
    ["lt", 10, true, false, false],
    ["lte", 10, true, true, false],
    ["eq", 10, false, true, false],
    ["ne", 10, true, false, true],
  ];
  for (const [operator, value, below, at, above] of cases) {
    it(`${operator} ${value} with numbers`, () => {
      const item = { operator, resource: "temp", value };
      expect([matches(item, { temp: 9.99 }), matches(item, { temp: 10 }), matches(item, { temp: 10.01 })]).toEqual([
        below,
        at,
        above,
      ]);
    });
    it(`${operator} with strings`, () => {
      const item = { operator, resource: "status", value: "m" };
      expect([matches(item, { status: "l" }), matches(item, { status: "m" }), matches(item, { status: "n" })]).toEqual([
        below,
        at,
        above,
      ]);
    });
  }

  it("a missing resource or a value of another type never matches, not even ne", () => {
    expect(matches({ operator: "ne", resource: "temp", value: 10 }, {})).toBe(false);
    expect(matches({ operator: "gt", resource: "temp", value: 10 }, { temp: "20" })).toBe(false);
    expect(matches({ operator: "eq", resource: "status", value: "ok" }, { status: 1 })).toBe(false);
  });

  it("a numeric string constant compares numerically with numbers", () => {
    expect(matches({ operator: "gt", resource: "temp", value: "25" }, { temp: 26 })).toBe(true);
    expect(matches({ operator: "gt", resource: "temp", value: "25" }, { temp: 9 })).toBe(false);
  });

  it("eq with 'true' matches a boolean true", () => {
    expect(matches({ operator: "eq", resource: "on", value: "true" }, { on: true })).toBe(true);
    expect(matches({ operator: "eq", resource: "on", value: "true" }, { on: false })).toBe(false);
  });
});

describe("${...} expressions over thing.state and observation", () => {
  it("compares with arithmetic over the thing's previous state", () => {
    const item = { operator: "gt" as const, resource: "temp", value: "${thing.state.temp + 5}" };
    expect(matches(item, { temp: 26 }, { temp: 20 })).toBe(true);
    expect(matches(item, { temp: 25 }, { temp: 20 })).toBe(false);
    expect(matches(item, { temp: 26 }, {})).toBe(false);
  });

  it("reads other resources of this observation", () => {
    const item = { operator: "lt" as const, resource: "temp", value: "${observation.limit * 2 - 1}" };
    expect(matches(item, { temp: 18, limit: 10 })).toBe(true);
    expect(matches(item, { temp: 19, limit: 10 })).toBe(false);
    expect(
      matches({ operator: "lt", resource: "temp", value: "${observation.state.limit}" }, { temp: 9, limit: 10 }),
    ).toBe(true);
  });

  it("allows plain math functions and parentheses", () => {
    const item = { operator: "eq" as const, resource: "v", value: "${max(abs(thing.state.a), 2) ^ 2 + (1 % 1)}" };
    expect(matches(item, { v: 9 }, { a: -3 })).toBe(true);
  });

  it("compares strings with a plain reference", () => {
    const item = { operator: "ne" as const, resource: "status", value: "${thing.state.status}" };
    expect(matches(item, { status: "b" }, { status: "a" })).toBe(true);
    expect(matches(item, { status: "a" }, { status: "a" })).toBe(false);
  });

  it("never concatenates strings in arithmetic", () => {
    const item = { operator: "eq" as const, resource: "v", value: "${thing.state.s + 1}" };
    expect(matches(item, { v: "a1" }, { s: "a" })).toBe(false);
  });

  it("runs the same with mathjs evaluation", () => {
    const r = compileRule(rule([{ operator: "gt", resource: "temp", value: "${thing.state.temp + 5}" }]), {
      expressionMode: "mathjs",
    });
    expect(evaluateRule(r, { observation: { state: { temp: 26 } }, thing: { state: { temp: 20 } } }).matched).toBe(
      true,
    );
    expect(evaluateRule(r, { observation: { state: { temp: 25 } }, thing: { state: { temp: 20 } } }).matched).toBe(
      false,
    );
  });

  for (const bad of [
    "${x = 5}",
    "${f(x) = x}",
    "${import({}, {})}",
    "${evaluate('1')}",
    "${unknown.name}",
    "${[1,2]}",
    "${a; b}",
  ]) {
    it(`refuses ${bad}`, () => {
      expect(() => compileRule(rule([{ operator: "gt", resource: "temp", value: bad }]))).toThrow(RuleCompileError);
    });
  }
});

const square: [number, number][] = [
  [10, 59],
  [11, 59],
  [11, 60],
  [10, 60],
];
// A "U" shape: the notch between the arms is outside.
const concave: [number, number][] = [
  [0, 0],
  [3, 0],
  [3, 3],
  [2, 3],
  [2, 1],
  [1, 1],
  [1, 3],
  [0, 3],
];

describe("polygons", () => {
  it("inside and outside, with [lon, lat] points and 'lat,lon' positions", () => {
    expect(matches({ operator: "inside", resource: "latlng", value: square }, { latlng: "59.5,10.5" })).toBe(true);
    expect(matches({ operator: "inside", resource: "latlng", value: square }, { latlng: "10.5,59.5" })).toBe(false);
    expect(matches({ operator: "outside", resource: "latlng", value: square }, { latlng: "58,10.5" })).toBe(true);
    expect(matches({ operator: "outside", resource: "latlng", value: square }, { latlng: "59.5,10.5" })).toBe(false);
  });

  it("a point on an edge or a vertex is inside", () => {
    expect(matches({ operator: "inside", resource: "latlng", value: square }, { latlng: "59,10.5" })).toBe(true);
    expect(matches({ operator: "inside", resource: "latlng", value: square }, { latlng: "60,11" })).toBe(true);
    expect(matches({ operator: "outside", resource: "latlng", value: square }, { latlng: "59,10.5" })).toBe(false);
  });

  it("a concave polygon leaves its notch outside though the notch is inside the bounding box", () => {
    expect(matches({ operator: "inside", resource: "latlng", value: concave }, { latlng: "2,1.5" })).toBe(false);
    expect(matches({ operator: "inside", resource: "latlng", value: concave }, { latlng: "2,0.5" })).toBe(true);
    expect(matches({ operator: "inside", resource: "latlng", value: concave }, { latlng: "2,2.5" })).toBe(true);
  });

  it("no position in the observation matches neither inside nor outside", () => {
    expect(matches({ operator: "inside", resource: "latlng", value: square }, {})).toBe(false);
    expect(matches({ operator: "outside", resource: "latlng", value: square }, {})).toBe(false);
  });

  it("refuses more than 25 points, fewer than 3, and another resource than latlng", () => {
    const many = Array.from({ length: 26 }, (_, i) => [Math.cos(i), Math.sin(i)] as [number, number]);
    expect(() => compileRule(rule([{ operator: "inside", resource: "latlng", value: many }]))).toThrow(/3 to 25/);
    expect(() => compileRule(rule([{ operator: "inside", resource: "latlng", value: square.slice(0, 2) }]))).toThrow(
      RuleCompileError,
    );
    expect(() => compileRule(rule([{ operator: "inside", resource: "pos", value: square }]))).toThrow(/latlng/);
  });

  it("answers as its bounding box and turf's booleanPointInPolygon for any polygon and point, edges and vertices included", () => {
    // Small integer and half-integer coordinates put many points exactly on edges, on vertices and
    // level with vertices (the crossing count's hard cases); the doubles check the general case.
    const coordinate = fc.oneof(
      fc.integer({ min: -4, max: 4 }).map((n) => n / 2),
      fc.double({ min: -3, max: 3, noNaN: true }),
    );
    const point = fc.tuple(coordinate, coordinate);
    fc.assert(
      fc.property(
        fc.array(point, { minLength: 3, maxLength: 25 }),
        fc.array(point, { maxLength: 20 }),
        (ring, extra) => {
          let compiled;
          try {
            compiled = compileRule(rule([{ operator: "inside", resource: "latlng", value: ring }]));
          } catch {
            return; // fewer than 3 distinct points: refused, as before
          }
          const closed = [...ring];
          const [first, last] = [ring[0]!, ring[ring.length - 1]!];
          if (first[0] !== last[0] || first[1] !== last[1]) closed.push(first);
          const feature = turfPolygon([closed]);
          const lons = closed.map((p) => p[0]);
          const lats = closed.map((p) => p[1]);
          // The bounding box first, as the engine always did: turf alone finds points outside it on
          // the boundary when products of subnormal coordinates underflow to 0.
          const inBox = (lon: number, lat: number): boolean =>
            lon >= Math.min(...lons) &&
            lon <= Math.max(...lons) &&
            lat >= Math.min(...lats) &&
            lat <= Math.max(...lats);
          for (const [lon, lat] of [...extra, ...ring]) {
            const inside = evaluateRule(compiled, { observation: { state: { latlng: { lat, lon } } } }).matched;
            expect(inside).toBe(inBox(lon, lat) && booleanPointInPolygon([lon, lat], feature));
          }
        },
      ),
      { numRuns: 3000 },
    );
  });

  it("enter and leave compare the previous position with the new one", () => {
    const enter = { operator: "enter" as const, resource: "latlng", value: square };
    const leave = { operator: "leave" as const, resource: "latlng", value: square };
    const inside = { latlng: "59.5,10.5" };
    const outside = { latlng: "58,10.5" };
    expect(matches(enter, inside, outside)).toBe(true);
    expect(matches(enter, inside, inside)).toBe(false);
    expect(matches(enter, outside, outside)).toBe(false);
    expect(matches(enter, inside, {})).toBe(false);
    expect(matches(leave, outside, inside)).toBe(true);
    expect(matches(leave, inside, inside)).toBe(false);
    expect(matches(leave, outside, outside)).toBe(false);
  });
});

describe("POIs", () => {
  // Along a meridian, metres per degree of latitude on turf's sphere (radius 6371008.8 m).
  const metresPerDegree = (6371008.8 * Math.PI) / 180;
  const poi = { center: { lat: "59.0", lon: "10.0" }, radius: 1000 };
  const at = (metres: number): string => `${59 + metres / metresPerDegree},10`;

  it("a point at the radius is inside; a metre further is outside", () => {
    expect(matches({ operator: "insidePoi", resource: "latlng", value: poi }, { latlng: at(1000) })).toBe(true);
    expect(matches({ operator: "insidePoi", resource: "latlng", value: poi }, { latlng: at(1001) })).toBe(false);
    expect(matches({ operator: "outsidePoi", resource: "latlng", value: poi }, { latlng: at(1001) })).toBe(true);
    expect(matches({ operator: "outsidePoi", resource: "latlng", value: poi }, { latlng: at(999) })).toBe(false);
  });

  it("enterPoi and leavePoi", () => {
    expect(
      matches({ operator: "enterPoi", resource: "latlng", value: poi }, { latlng: at(10) }, { latlng: at(5000) }),
    ).toBe(true);
    expect(
      matches({ operator: "enterPoi", resource: "latlng", value: poi }, { latlng: at(10) }, { latlng: at(20) }),
    ).toBe(false);
    expect(
      matches({ operator: "leavePoi", resource: "latlng", value: poi }, { latlng: at(5000) }, { latlng: at(10) }),
    ).toBe(true);
  });

  it("refuses a POI without a positive radius", () => {
    expect(() =>
      compileRule(rule([{ operator: "insidePoi", resource: "latlng", value: { center: poi.center, radius: 0 } }])),
    ).toThrow(RuleCompileError);
  });
});

describe("every Elasticsearch geo_point form", () => {
  const forms: [string, unknown][] = [
    ["'lat,lon'", "59.91,10.75"],
    ["'lat, lon' with spaces", " 59.91 , 10.75 "],
    ["{lat, lon}", { lat: 59.91, lon: 10.75 }],
    ["{lat, lon} as strings", { lat: "59.91", lon: "10.75" }],
    ["[lon, lat]", [10.75, 59.91]],
    ["WKT POINT(lon lat)", "POINT (10.75 59.91)"],
  ];
  for (const [name, value] of forms) {
    it(name, () => {
      const out: [number, number] = [0, 0];
      expect(readGeoPoint(value, out)).toBe(true);
      expect(out[0]).toBeCloseTo(10.75, 6);
      expect(out[1]).toBeCloseTo(59.91, 6);
    });
  }
  it("a geohash", () => {
    const out: [number, number] = [0, 0];
    expect(readGeoPoint("u4xsu", out)).toBe(true);
    expect(out[0]).toBeCloseTo(10.7, 1);
    expect(out[1]).toBeCloseTo(59.9, 1);
  });
  it("refuses what is none of them", () => {
    const out: [number, number] = [0, 0];
    for (const bad of ["abc!", "91,10", "45,", ",10", "1,2,3", "1.2.3,4", [10], { lat: 1 }, 42, null, "POINT(1)"])
      expect(readGeoPoint(bad, out), JSON.stringify(bad)).toBe(false);
  });
  it("reads 'lat,lon' text to exactly the doubles Number() gives, in every form Java's parseDouble takes", () => {
    const out: [number, number] = [0, 0];
    const r = rng(3);
    for (let i = 0; i < 20_000; i++) {
      const lat = ((r() - 0.5) * 180).toFixed(Math.floor(r() * 12));
      const lon = ((r() - 0.5) * 360).toFixed(Math.floor(r() * 14));
      expect(readGeoPoint(`${lat},${lon}`, out)).toBe(true);
      expect(out).toEqual([Number(lon), Number(lat)]);
    }
    for (const [text, lon, lat] of [
      ["1.,2", 2, 1],
      [".5,-.25", -0.25, 0.5],
      ["1e1,2E-1", 0.2, 10],
      ["-0,-0", -0, -0],
      ["12345678901234567,1", NaN, NaN],
    ] as const) {
      expect(readGeoPoint(text, out), text).toBe(!Number.isNaN(lat));
      if (!Number.isNaN(lat)) expect(out, text).toEqual([lon, lat]);
    }
  });
});

describe("nested resources", () => {
  const nested = [
    { type: "door", id: "front", state: { open: 0 } },
    { type: "door", id: "back", state: { open: 1 } },
    { state: { level: 7 } },
  ];
  it("<type>.<resource> matches when any nested object of that type matches", () => {
    expect(matches({ operator: "eq", resource: "door.open", value: 1 }, {}, {}, nested)).toBe(true);
    expect(matches({ operator: "gt", resource: "door.open", value: 1 }, {}, {}, nested)).toBe(false);
  });
  it("untyped.<resource> reads nested objects without a type", () => {
    expect(matches({ operator: "gte", resource: "untyped.level", value: 7 }, {}, {}, nested)).toBe(true);
    expect(matches({ operator: "gte", resource: "door.level", value: 7 }, {}, {}, nested)).toBe(false);
  });
  it("expressions read nested values of the thing and the observation", () => {
    const item = { operator: "gt" as const, resource: "untyped.level", value: "${observation.door.open + 5}" };
    expect(matches(item, {}, {}, nested)).toBe(true);
  });
});
