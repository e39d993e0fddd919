import { describe, expect, it } from "vitest";
import { jsonShapeProblem, MAX_JSON_CONTAINERS, MAX_JSON_DEPTH } from "../../src/api/json-shape.js";

const limits = { depth: 3, containers: 5 };

describe("the JSON shape check that runs before a request body is parsed", () => {
  it("passes bodies within the limits, whatever brackets their strings hold", () => {
    expect(jsonShapeProblem('{"a":{"b":[1]}}', limits)).toBeUndefined();
    expect(jsonShapeProblem('{"a":"[[[[[[[[{{{{{{{"}', limits)).toBeUndefined();
    expect(jsonShapeProblem('{"a\\"[[[[":"\\\\","b":[]}', limits)).toBeUndefined();
    expect(jsonShapeProblem("not json [", limits)).toBeUndefined();
  });

  it("names the top-level property that holds a part nested too deep", () => {
    expect(jsonShapeProblem('{"query":{"bool":{"must":[{}]}}}', limits)).toEqual({
      property: "query",
      why: "nested deeper than 3 levels",
    });
    expect(jsonShapeProblem('{"a":"x","b\\u0041":[[[1]]]}', limits)?.property).toBe("bA");
    expect(jsonShapeProblem("[[[[1]]]]", limits)?.property).toBe("body");
  });

  it("refuses more objects and arrays than the limit, wherever they are", () => {
    expect(jsonShapeProblem("[{},{},{},{}]", limits)).toBeUndefined();
    expect(jsonShapeProblem("[{},{},{},{},{}]", limits)).toEqual({
      property: "body",
      why: "holds more than 5 objects and arrays",
    });
  });

  it("lets the largest ingest batch through and stops the bodies that held the event loop for seconds", () => {
    const observation = {
      thingName: "t1",
      timestamp: 1,
      state: { temp: 1, latlng: { lat: 1, lon: 2 } },
      nested: [{ type: "door", state: { open: 1 } }],
    };
    expect(jsonShapeProblem(JSON.stringify(new Array(10_000).fill(observation)))).toBeUndefined();
    expect(jsonShapeProblem(`[${"{},".repeat(MAX_JSON_CONTAINERS)}{}]`)?.why).toMatch(/more than/);
    expect(jsonShapeProblem("[".repeat(MAX_JSON_DEPTH + 1) + "]".repeat(MAX_JSON_DEPTH + 1))?.why).toMatch(/deeper/);
  });
});
