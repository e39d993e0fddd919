import { describe, expect, it } from "vitest";
import { formulate } from "../../bench/engine/peer/formulations.js";
import { translate } from "../../bench/engine/peer/translate.js";
import { workload } from "../../bench/engine/workload.js";
import type { ExpressionItem, Rule } from "../../src/rules/index.js";
import { testRule } from "../engine/support.js";

const rule = (expression: ExpressionItem[], extra: Partial<Rule> = {}): Rule =>
  testRule("r", expression, {
    filter: { domain: "root", thingType: "T" },
    threshold: { count: 3, interval: 0 },
    ...extra,
  });

const square: [number, number][] = [
  [10, 59],
  [11, 59],
  [11, 60],
  [10, 60],
];

describe("bench/engine's rules as Esper EPL", () => {
  it("makes a count rule a match_recognize of count consecutive matches per thing, gated on the rule's resources", () => {
    const [s] = translate([rule([{ operator: "gte", resource: "temp", value: 80 }])], []).statements;
    expect(s!.epl).toContain("from Obs(thingType = ?:type:string and (temp is not null))");
    expect(s!.epl).toContain("partition by thingName");
    expect(s!.epl).toContain("pattern (A{3})");
    expect(s!.epl).toContain("define A as A.temp >= ?:v0:double");
    expect(s!.params).toEqual([
      ["type", "string", "T"],
      ["v0", "double", 80],
    ]);
  });

  it("treats count 0 as 1, as dms does", () => {
    const [s] = translate(
      [rule([{ operator: "eq", resource: "status", value: "s1" }], { threshold: { count: 0, interval: 0 } })],
      [],
    ).statements;
    expect(s!.epl).toContain("pattern (A{1})");
    expect(s!.epl).toContain("A.status = ?:v0:string");
  });

  it("reads thing.state.* from the state before the observation and observation.* from the observation", () => {
    const [s] = translate(
      [rule([{ operator: "gt", resource: "press", value: "${thing.state.press * 1 + observation.hum}" }])],
      [],
    ).statements;
    expect(s!.epl).toContain("define A as A.press > A.prevPress * 1 + A.hum");
  });

  it("gives geofences to the UDFs, closing open rings, with enter/leave needing both positions", () => {
    const spec = translate(
      [
        rule([{ operator: "enter", resource: "latlng", value: square }]),
        rule([
          { operator: "leavePoi", resource: "latlng", value: { center: { lat: "59.5", lon: "10.5" }, radius: 100 } },
        ]),
      ],
      [],
    );
    expect(spec.polygons[0]).toEqual([...square, square[0]]);
    expect(spec.pois[0]).toEqual([59.5, 10.5, 100]);
    expect(spec.statements[0]!.epl).toContain(
      "(A.lat is not null and A.prevLat is not null and inPolygon(A.lon, A.lat, ?:v0:int) and not inPolygon(A.prevLon, A.prevLat, ?:v0:int))",
    );
    expect(spec.statements[1]!.epl).toContain(
      "not inPoi(A.lon, A.lat, ?:v0:int) and inPoi(A.prevLon, A.prevLat, ?:v0:int)",
    );
    expect(spec.statements[1]!.epl).toContain("(lat is not null)");
  });

  it("refuses what it cannot translate faithfully rather than translating it loosely", () => {
    expect(() => translate([rule([{ operator: "gt", resource: "battery", value: 1 }])], [])).toThrow(
      /no resource battery/,
    );
    expect(() =>
      translate([rule([{ operator: "gt", resource: "temp", value: "${max(thing.state.temp, 1)}" }])], []),
    ).toThrow(/arithmetic/);
    expect(() =>
      translate(
        [
          rule([{ operator: "gt", resource: "temp", value: 1 }], {
            filter: { domain: "root", thingType: "T", thingNames: ["a"] },
          }),
        ],
        [],
      ),
    ).toThrow(/thing type filters only/);
  });

  it("translates every rule of the bench's workload, one statement each", () => {
    const w = workload({ types: 2, thingsPerType: 3 });
    const spec = translate(w.rules, w.things);
    expect(spec.statements).toHaveLength(w.rules.length);
    expect(spec.things).toHaveLength(6);
    // 23 shapes compile once each; the constants are parameters.
    expect(new Set(spec.statements.map((s) => s.epl)).size).toBeLessThan(30);
  });

  it("formulates the rules as tables of constants, one join per condition shape, the runs counted once for all rules", () => {
    const w = workload({ types: 2, thingsPerType: 3 });
    const spec = translate(w.rules, w.things);
    expect(formulate(spec, "statements")).toBeUndefined();
    const merge = formulate(spec, "table-merge")!;
    const shapes = new Set(spec.statements.map((s) => `${s.presence}\n${s.condition}`)).size;
    expect(merge.rows).toHaveLength(shapes);
    expect(merge.rows.flatMap((r) => r.rows.map((row) => row[0]))).toEqual(
      expect.arrayContaining(w.rules.map((r) => r.id)),
    );
    expect(merge.rows.reduce((n, r) => n + r.rows.length, 0)).toBe(w.rules.length);
    expect(merge.module.match(/^create table Rules\d+ \(ruleId string primary key/gm)).toHaveLength(shapes);
    expect(merge.module.match(/^insert into Eval /gm)).toHaveLength(shapes);
    expect(merge.module.match(/^on Eval as e merge Counts/gm)).toHaveLength(1);
    expect(merge.module).toContain("from Obs(temp is not null) as o unidirectional");
    expect(merge.module).toContain("coalesce(o.temp > o.prevTemp + 800, false) as hit");
    expect(formulate(spec, "table-merge-live")!.module).toContain("or Counts[r.ruleId, o.thingName].n is not null");
    expect(formulate(spec, "window-merge")!.module).toContain("create window Rules0#keepall as RuleRow0");
    const recognize = formulate(spec, "table-recognize")!.module;
    expect(recognize).toContain("partition by ruleId, thingName");
    expect(recognize).not.toContain("merge Counts");
  });
});
