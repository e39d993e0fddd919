import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BASE_PROVISION, startTestDms, type TestDms } from "../support/dms.js";
import { json } from "../support/http.js";

/** FIND through REST: the interface's requirements, errors and privileges. */

const NOW = Date.now();
const range = { range: { timestamp: { gte: "now-1d/d" } } };

describe("POST /observations/find", () => {
  let t: TestDms;
  beforeAll(async () => {
    t = await startTestDms({
      provision: {
        ...BASE_PROVISION,
        users: [
          ...BASE_PROVISION.users!,
          {
            userName: "blind",
            password: "blind-pw",
            role: "ReadWrite",
            homeDomain: "acme",
            privileges: { acme: ["ThingTypes.READ"] },
          },
        ],
      },
    });
    await t.dms.services.observations.insertBatch(
      [
        { thingName: "t1", thingType: "10", ts: NOW - 3_600_000, state: { temp: 20 } },
        { thingName: "t2", thingType: "10", ts: NOW - 7_200_000, state: { temp: 22 } },
        { thingName: "e1", thingType: "20", ts: NOW - 3_600_000, state: { power: 5 } },
        { thingName: "t1", thingType: "10", ts: NOW - 5 * 86_400_000, state: { temp: 1 } },
      ].map((o) => ({
        document: { thingName: o.thingName, thingType: o.thingType, domain: "acme", timestamp: o.ts, state: o.state },
      })),
    );
  });
  afterAll(() => t.close());

  const find = (user: string, body: unknown) => t.call("POST", "/observations/find", { user, body });

  it("answers the raw ES 5.6 output for a query in filter context with aggregations", async () => {
    const res = await find("alice", {
      query: {
        size: 0,
        query: { bool: { filter: [range, { term: { thingType: "10" } }] } },
        aggs: { t: { avg: { field: "state.temp" } } },
      },
    });
    expect(res.status).toBe(200);
    const body = await json(res);
    expect(body).toMatchObject({
      timed_out: false,
      hits: { total: 2, max_score: 0, hits: [] },
      aggregations: { t: { value: 21 } },
    });
  });

  it("searches only thing types the caller may read, limited by queryScope.thingTypes", async () => {
    const all = await json(await find("admin", { query: { query: range } }));
    expect(all.hits.total).toBe(3);
    const scoped = await json(await find("admin", { queryScope: { thingTypes: ["20"] }, query: { query: range } }));
    expect(scoped.hits.total).toBe(1);
    // eastie holds privileges on east only, where thing type 20 lives.
    const eastie = await json(await find("eastie", { query: { query: range } }));
    expect(eastie.hits.hits.map((h: { _source: { thingName: string } }) => h._source.thingName)).toEqual(["e1"]);
  });

  it("needs Observations.READ on the home domain", async () => {
    const res = await find("blind", { query: { query: range } });
    expect(res.status).toBe(403);
    expect(await json(res)).toMatchObject({ messageKey: "NOT_AUTHORIZED" });
  });

  it("a missing query is PROPERTY_REQUIRED with property query", async () => {
    const res = await find("alice", { queryScope: { thingTypes: ["10"] } });
    expect(res.status).toBe(400);
    expect(await json(res)).toMatchObject({ messageKey: "PROPERTY_REQUIRED", property: "query" });
  });

  const invalid: [string, unknown][] = [
    ["no range on timestamp", { query: { match_all: {} } }],
    ["no query clause at all", { size: 0 }],
    ["a range on timestamp without gte", { query: { range: { timestamp: { gt: "now-1d" } } } }],
    ["the timestamp range only in should", { query: { bool: { should: [range, { match_all: {} }] } } }],
    ["a global aggregation", { query: range, aggs: { all: { global: {} } } }],
    ["an unsupported query", { query: { bool: { filter: [range, { fuzzy: { thingName: "t" } }] } } }],
    ["an unsupported aggregation", { query: range, aggs: { s: { significant_terms: { field: "thingName" } } } }],
    ["an unknown request key", { query: range, rescore: {} }],
    ["a bad date", { query: { range: { timestamp: { gte: "yesterday" } } } }],
    ["a script", { query: range, aggs: { a: { avg: { script: "doc.x" } } } }],
    ["query not an object", "match_all"],
    ["from + size over the window", { query: range, from: 9999, size: 2 }],
  ];
  it.each(invalid)("%s is INVALID_ARGUMENTS on query", async (_name, query) => {
    const res = await find("alice", { query });
    expect(res.status).toBe(400);
    expect(await json(res)).toMatchObject({ messageKey: "INVALID_ARGUMENTS", property: "query" });
  });

  it("is described in the OpenAPI document with the export operations", async () => {
    const doc = await json(await t.call("GET", "/openapi.json"));
    for (const path of [
      "/observations/find",
      "/observations/export/jobs",
      "/observations/export/jobs/{id}",
      "/observations/export/jobs/{id}/executions",
      "/observations/export/executions",
      "/observations/export/executions/{id}",
      "/observations/export/executions/{id}/download",
      "/storage/exports/{id}",
    ]) {
      expect(doc.paths, path).toHaveProperty([path]);
    }
  });

  it("names the unsupported clause", async () => {
    const body = await json(
      await find("alice", { query: { query: { bool: { must: [range, { more_like_this: {} }] } } } }),
    );
    expect(body.message).toContain("more_like_this");
  });
});
