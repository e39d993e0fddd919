import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { API_KEY, BASE_PROVISION, startTestDms, type TestDms } from "../support/dms.js";
import { json } from "../support/http.js";

/**
 * Hostile FIND requests: each is answered with
 * INVALID_ARGUMENTS naming what is wrong, or answered correctly, and none
 * holds the event loop: /healthz keeps answering while they run.
 */

const NOW = Date.now();
const range = { range: { timestamp: { gte: "now-1d/d" } } };
/** Long enough that V8's backtracking on `*a*a*a*a*b` or `(a+)+b` takes minutes per value. */
const LONG = "a".repeat(250);
const DOCS = 10_000;

type Find = (body: unknown) => Promise<Response>;

/** Polls /healthz one request after another until `work` settles: how many answered 200 meanwhile. */
async function healthzDuring<T>(t: TestDms, work: Promise<T>): Promise<{ result: T; healthz: number }> {
  let settled = false;
  const done = work.finally(() => (settled = true));
  let healthz = 0;
  const poll = (async () => {
    while (!settled) {
      const res = await fetch(`${t.url}/healthz`);
      await res.arrayBuffer();
      if (res.status === 200 && !settled) healthz++;
    }
  })();
  const result = await done;
  await poll;
  return { result, healthz };
}

function expectInvalid(body: Record<string, unknown>, ...fragments: string[]): void {
  expect(body).toMatchObject({ messageKey: "INVALID_ARGUMENTS", property: "query" });
  for (const f of fragments) expect(body.message).toContain(f);
}

async function insert(t: TestDms, docs: { thingName: string; state: Record<string, unknown> }[]): Promise<void> {
  await t.dms.services.observations.insertBatch(
    docs.map((d, i) => ({
      document: { thingName: d.thingName, thingType: "10", domain: "acme", timestamp: NOW - 1000 - i, state: d.state },
    })),
  );
}

describe("FIND refuses what would break it, by name (finding 3)", () => {
  let t: TestDms;
  let find: Find;
  beforeAll(async () => {
    t = await startTestDms();
    find = (body) => t.call("POST", "/observations/find", { user: "alice", body });
    await insert(t, [
      { thingName: "t1", state: { temp: 20 } },
      { thingName: "t2", state: { temp: 22 } },
      { thingName: "t1", state: { temp: 24 } },
    ]);
  });
  afterAll(() => t.close());

  /** A body as text, for nesting deeper than JSON.stringify goes. */
  const post = async (body: string): Promise<Response> =>
    fetch(`${t.url}/observations/find`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": API_KEY, authorization: await t.token("alice") },
      body,
    });

  it("an invalid regular expression in a terms include is 400 naming the include", async () => {
    for (const include of ["(a", "(?=a)b", "(a)\\1"]) {
      const res = await find({
        query: { size: 0, query: range, aggs: { names: { terms: { field: "thingName", include } } } },
      });
      expect(res.status).toBe(400);
      expectInvalid(await json(res), "[aggs.names.terms.include]", "not a valid regular expression");
    }
  });

  it("an invalid regexp query or an over-long pattern is 400 naming the clause", async () => {
    const bad = await find({ query: { query: { bool: { filter: [range, { regexp: { thingName: "[a" } }] } } } });
    expect(bad.status).toBe(400);
    expectInvalid(await json(bad), "[regexp.thingName]");
    const long = await find({
      query: { query: { bool: { filter: [range, { wildcard: { thingName: "*a".repeat(600) } }] } } },
    });
    expect(long.status).toBe(400);
    expectInvalid(await json(long), "[wildcard.thingName]", "1000");
  });

  it("bool nested 3,000 levels is 400 naming the nesting limit, and 21 levels names Elasticsearch's", async () => {
    const nest = (levels: number): string =>
      '{"bool":{"filter":['.repeat(levels) + JSON.stringify(range) + "]}}".repeat(levels);
    // Written out by hand: JSON.stringify itself recurses once per level.
    // Past the REST layer's JSON depth (Jackson's 1000): refused before anything parses it.
    const deep = await post(`{"query":{"query":${nest(3000)}}}`);
    expect(deep.status).toBe(400);
    expectInvalid(await json(deep), "nested deeper than 1000 levels");
    // Within it but past FIND's own JSON depth: refused by FIND's iterative check, before any recursion.
    const deeper = await post(`{"query":{"query":${nest(300)}}}`);
    expect(deeper.status).toBe(400);
    expectInvalid(await json(deeper), "nests deeper than 200 levels");
    const over = await post(`{"query":{"query":${nest(21)}}}`);
    expect(over.status).toBe(400);
    expectInvalid(await json(over), "query clauses nest too deep", "indices.query.bool.max_nested_depth");
    const within = await post(`{"query":{"query":${nest(19)}}}`);
    expect(within.status).toBe(200);
  });

  it("aggregations nested 10,000 levels are 400 naming the nesting limit, and 11 levels name the aggregation limit", async () => {
    const nest = (levels: number): string =>
      '{"x":{"terms":{"field":"thingName"},"aggs":'.repeat(levels) +
      '{"x":{"terms":{"field":"thingName"}}}' +
      "}}".repeat(levels);
    const body = (levels: number): string =>
      `{"query":{"size":0,"query":${JSON.stringify(range)},"aggs":${nest(levels)}}}`;
    const deep = await post(body(10_000));
    expect(deep.status).toBe(400);
    expectInvalid(await json(deep), "nested deeper than 1000 levels");
    const deeper = await post(body(150));
    expect(deeper.status).toBe(400);
    expectInvalid(await json(deeper), "nests deeper than 200 levels");
    const over = await post(body(10));
    expect(over.status).toBe(400);
    expectInvalid(await json(over), "aggregations nest too deep", "the limit is 10");
    expect((await post(body(9))).status).toBe(200);
  });

  it("deep JSON where nothing is compiled (an aggregation's meta) is 400, not a stack overflow", async () => {
    let meta: unknown = 1;
    // 500: within the REST layer's JSON depth (1000), so FIND's own check is the one that answers.
    for (let i = 0; i < 500; i++) meta = [meta];
    const res = await find({ query: { size: 0, query: range, aggs: { a: { meta, avg: { field: "state.temp" } } } } });
    expect(res.status).toBe(400);
    expectInvalid(await json(res), "nests deeper than");
  });

  it("a terms query on thingName with 40,000 values is answered", async () => {
    const names = ["t1", ...Array.from({ length: 39_999 }, (_, i) => `nobody-${i}`)];
    const res = await find({ query: { query: { bool: { filter: [range, { terms: { thingName: names } }] } } } });
    expect(res.status).toBe(200);
    const body = await json(res);
    expect(body.hits.total).toBe(2);
    expect(body.hits.hits.map((h: { _source: { thingName: string } }) => h._source.thingName)).toEqual(["t1", "t1"]);
  });

  it("over the terms, clause, bucket and result-window limits is 400 naming the limit", async () => {
    const terms = await find({
      query: { query: { bool: { filter: [range, { terms: { thingName: Array.from({ length: 70_000 }, String) } }] } } },
    });
    expectInvalid(await json(terms), "index.max_terms_count");
    const clauses = await find({
      query: { query: { bool: { filter: [range], should: Array.from({ length: 1025 }, () => ({ match_all: {} })) } } },
    });
    expectInvalid(await json(clauses), "indices.query.bool.max_clause_count");
    const buckets = await find({
      query: {
        size: 0,
        query: range,
        aggs: { h: { histogram: { field: "state.temp", interval: 0.00005, min_doc_count: 0 } } },
      },
    });
    expectInvalid(await json(buckets), "search.max_buckets");
    const window = await find({ query: { query: range, from: 9_995, size: 10 } });
    expectInvalid(await json(window), "index.max_result_window");
    const inner = await find({ query: { size: 0, query: range, aggs: { t: { top_hits: { size: 101 } } } } });
    expectInvalid(await json(inner), "index.max_inner_result_window");
  });
});

describe("backtracking patterns take linear time and the service keeps answering (finding 4)", () => {
  let t: TestDms;
  let find: Find;
  beforeAll(async () => {
    t = await startTestDms();
    find = (body) => t.call("POST", "/observations/find", { user: "alice", body });
    const docs = Array.from({ length: DOCS }, (_, i) => ({
      thingName: i % 2 === 0 ? "t1" : "t2",
      state: { s: i === 0 ? `${LONG}b` : LONG, [LONG]: i },
    }));
    await insert(t, docs);
    // The thread pool starts on first use; start it before measuring anything against it.
    expect((await find({ query: { size: 0, query: range } })).status).toBe(200);
  });
  afterAll(() => t.close());

  const filtered = (clause: unknown) => ({ size: 1, query: { bool: { filter: [range, clause] } } });

  it("wildcard *a*a*a*a*b on 250-character values", async () => {
    const { result, healthz } = await healthzDuring(
      t,
      find({ query: filtered({ wildcard: { "state.s": "*a*a*a*a*b" } }) }),
    );
    expect(result.status).toBe(200);
    const body = await json(result);
    expect(body.hits.total).toBe(1);
    expect(body.hits.hits[0]._source.state.s).toBe(`${LONG}b`);
    expect(healthz).toBeGreaterThan(0);
  });

  it("regexp (a+)+b on 250-character values", async () => {
    const { result, healthz } = await healthzDuring(t, find({ query: filtered({ regexp: { "state.s": "(a+)+b" } }) }));
    expect(result.status).toBe(200);
    expect((await json(result)).hits.total).toBe(1);
    expect(healthz).toBeGreaterThan(0);
  });

  it("terms include (a+)+b on 250-character values", async () => {
    const { result, healthz } = await healthzDuring(
      t,
      find({ query: { size: 0, query: range, aggs: { s: { terms: { field: "state.s", include: "(a+)+b" } } } } }),
    );
    expect(result.status).toBe(200);
    const body = await json(result);
    expect(body.aggregations.s.buckets).toEqual([{ key: `${LONG}b`, doc_count: 1 }]);
    expect(healthz).toBeGreaterThan(0);
  });

  it("_source pattern state.*a*a*a*a*b on a 250-character field name", async () => {
    const { result, healthz } = await healthzDuring(
      t,
      find({ query: { size: 10, query: range, _source: ["thingName", "state.*a*a*a*a*b"] } }),
    );
    expect(result.status).toBe(200);
    const body = await json(result);
    expect(body.hits.total).toBe(DOCS);
    // No field name ends with b: only thingName is left of each document.
    for (const h of body.hits.hits) expect(Object.keys(h._source)).toEqual(["thingName"]);
    expect(healthz).toBeGreaterThan(0);
  });

  it("the patterns keep their meaning: ?, escapes and _source wildcards", async () => {
    const one = await json(await find({ query: filtered({ wildcard: { "state.s": `${"?".repeat(250)}b` } }) }));
    expect(one.hits.total).toBe(1);
    const none = await json(await find({ query: filtered({ wildcard: { "state.s": "a\\*" } }) }));
    expect(none.hits.total).toBe(0);
    const source = await json(await find({ query: { size: 1, query: range, _source: "state.s*" } }));
    expect(Object.keys(source.hits.hits[0]._source.state)).toEqual(["s"]);
  });
});

describe("a query over its time budget gets INVALID_ARGUMENTS and the service stays up", () => {
  let t: TestDms;
  let find: Find;
  beforeAll(async () => {
    t = await startTestDms({ env: { DMS_FIND_TIMEOUT_MS: "5000" } });
    find = (body) => t.call("POST", "/observations/find", { user: "alice", body });
    await insert(t, [
      ...Array.from({ length: 100_000 }, (_, i) => ({ thingName: i % 2 ? "t1" : "t2", state: { s: `${LONG}${i}` } })),
      { thingName: "small", state: { s: "x" } },
    ]);
    await stillAnswers();
  });
  afterAll(() => t.close());

  /** Reads one observation through the thing name index: well within any budget. */
  const stillAnswers = async (): Promise<void> => {
    const res = await find({ query: { query: { bool: { filter: [range, { term: { thingName: "small" } }] } } } });
    expect(res.status).toBe(200);
    expect((await json(res)).hits.hits[0]._source.state).toEqual({ s: "x" });
  };

  // Each value is matched against every pattern: far more work than five seconds allow on any machine.
  const patterns = Array.from({ length: 200 }, (_, i) => ({ wildcard: { "state.s": `*a*a*a*${i}*b` } }));

  it("stopped by the query itself between two documents", async () => {
    const { result, healthz } = await healthzDuring(
      t,
      find({ query: { size: 0, query: { bool: { filter: [range], should: patterns } } } }),
    );
    expect(result.status).toBe(400);
    expectInvalid(await json(result), "ran longer than the 5000 ms");
    expect(healthz).toBeGreaterThan(0);
    await stillAnswers();
  });

  it("stopped by ending its thread when it cannot check the clock (inside one aggregation)", async () => {
    const { result, healthz } = await healthzDuring(
      t,
      find({ query: { size: 0, query: range, aggs: { f: { filters: { filters: patterns } } } } }),
    );
    expect(result.status).toBe(400);
    expectInvalid(await json(result), "ran longer than the 5000 ms");
    expect(healthz).toBeGreaterThan(0);
    // Its thread was ended and a new one answers.
    await stillAnswers();
  });
});

describe("/things/find runs where FIND runs: off the event loop, within FIND's budget", () => {
  let t: TestDms;
  let findThings: Find;
  beforeAll(async () => {
    // Things whose labels make every pattern read 250 characters: 2,000 x 1,000 patterns is far
    // more work than one second allows on any machine.
    const things = Array.from({ length: 2000 }, (_, i) => ({
      thingName: `long-${i}`,
      thingType: "10",
      domain: "acme",
      label: `${"a".repeat(250)}`,
    }));
    t = await startTestDms({
      env: { DMS_FIND_TIMEOUT_MS: "1000" },
      provision: { ...BASE_PROVISION, things: [...(BASE_PROVISION.things ?? []), ...things] },
    });
    findThings = (body) => t.call("POST", "/things/find", { user: "alice", body });
  });
  afterAll(() => t.close());

  const patterns = Array.from({ length: 1000 }, (_, i) => ({ wildcard: { label: `*a*a*a*${i}*b` } }));

  it("a search over its budget is INVALID_ARGUMENTS and /healthz answers meanwhile", async () => {
    const { result, healthz } = await healthzDuring(
      t,
      findThings({ query: { size: 1, query: { bool: { should: patterns } } } }),
    );
    expect(result.status).toBe(400);
    expectInvalid(await json(result), "ran longer than the 1000 ms");
    expect(healthz).toBeGreaterThan(0);
  });

  it("a search within its budget answers as before", async () => {
    const res = await findThings({ query: { query: { term: { thingName: "t1" } } } });
    expect(res.status).toBe(200);
    const body = await json(res);
    expect(body.hits.total).toBe(1);
    expect(body.hits.hits[0]).toMatchObject({ _index: "things", _id: "t1", _source: { serial: "SN1" } });
  });
});
