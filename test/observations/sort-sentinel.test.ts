import { describe, expect, it } from "vitest";
import { declaredFieldTypes, findJson, planFind, searchDocs, type Doc } from "../../src/observations/index.js";

const docs = (): Doc[] =>
  [{ battery: 40, temp: 1.5 }, {}, { battery: 7, temp: 2.5 }].map((state, i) => ({
    id: i + 1,
    thingType: "10",
    source: { thingName: `t${i}`, thingType: "10", timestamp: 1000 + i, state },
    score: 0,
  }));

const TYPES = declaredFieldTypes([
  {
    resources: [
      { name: "battery", dataType: "long" },
      { name: "temp", dataType: "double" },
      { name: "seen", dataType: "date" },
    ],
  },
]);

/** The sort values of the hits, as the answer's JSON text writes them. */
function sortTexts(field: string, order: string, missing?: string): string[] {
  const request = { sort: [{ [field]: missing ? { order, missing } : { order } }], size: 10 };
  const text = findJson(searchDocs(planFind(request, 0, { requireTimestamp: false, fieldTypes: TYPES }), docs(), 1));
  return [...text.matchAll(/"sort":\[([^\]]*)\]/g)].map((m) => m[1]!);
}

describe("the sort value of a document without the field follows the declared type, as in Elasticsearch", () => {
  it("a field declared long: Long.MAX_VALUE ascending, Long.MIN_VALUE descending, written whole", () => {
    expect(sortTexts("state.battery", "asc")).toEqual(["7", "40", "9223372036854775807"]);
    expect(sortTexts("state.battery", "desc")).toEqual(["40", "7", "-9223372036854775808"]);
    expect(sortTexts("state.battery", "asc", "_first")).toEqual(["-9223372036854775808", "7", "40"]);
  });

  it("a field declared double keeps the double sentinels; an undeclared one is judged by its values", () => {
    expect(sortTexts("state.temp", "asc")).toEqual(["1.5", "2.5", '"Infinity"']);
    expect(sortTexts("state.temp", "desc")).toEqual(["2.5", "1.5", '"-Infinity"']);
    const undeclared = findJson(
      searchDocs(planFind({ sort: ["state.battery"] }, 0, { requireTimestamp: false }), docs(), 1),
    );
    expect(undeclared).toContain('"sort":["Infinity"]');
  });

  it("a date is sorted as a long; types that disagree on a resource leave it undeclared", () => {
    expect(sortTexts("state.seen", "asc")).toEqual([
      "9223372036854775807",
      "9223372036854775807",
      "9223372036854775807",
    ]);
    expect(
      declaredFieldTypes([
        { resources: [{ name: "battery", dataType: "long" }] },
        {
          resources: [
            { name: "battery", dataType: "double" },
            { name: "level", dataType: "string" },
          ],
        },
      ]),
    ).toEqual({ "state.level": "string" });
  });

  it("findJson writes a bigint whole and leaves strings that look like its mark alone", () => {
    expect(findJson({ a: 1n, b: "bigint-x:5", c: [-9223372036854775808n] })).toBe(
      '{"a":1,"b":"bigint-x:5","c":[-9223372036854775808]}',
    );
    expect(findJson({ a: "x" })).toBe('{"a":"x"}');
  });
});
