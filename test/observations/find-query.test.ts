import { afterAll, describe, expect, it } from "vitest";
import { ES_BACKENDS, T0 } from "./es.js";

describe.each(ES_BACKENDS)("on $name", ({ esIndex }) => {
  /**
   * Queries and the hits shape, each against Elasticsearch 5.6's documented answer.
   * Sources: elastic.co/guide/en/elasticsearch/reference/5.6/query-dsl-*.html and
   * search-request-*.html, and rest-api-spec search/*.yml where named.
   */

  const ids = (r: { hits: { hits: { _id: string }[] } }): string[] => r.hits.hits.map((h) => h._id).sort();

  describe("range on dates (reference 5.6 query-dsl-range-query: date math and rounding, formats, time_zone)", () => {
    const es = esIndex([
      { timestamp: "2014-10-31T23:59:59.999Z" }, // 1
      { timestamp: "2014-11-01T00:00:00.000Z" }, // 2
      { timestamp: "2014-11-30T23:59:59.999Z" }, // 3
      { timestamp: "2014-12-01T00:00:00.000Z" }, // 4
    ]);
    afterAll(() => es.close());
    const q = (spec: Record<string, unknown>) =>
      es.raw({
        query: { bool: { filter: [{ range: { timestamp: { gte: 0 } } }, { range: { timestamp: spec } }] } },
      });

    it("gt 2014-11-18||/M rounds up to 2014-11-30T23:59:59.999: excludes the entire month", async () => {
      expect(ids(await q({ gt: "2014-11-18||/M" }))).toEqual(["4"]);
    });
    it("gte 2014-11-18||/M rounds down to 2014-11-01", async () => {
      expect(ids(await q({ gte: "2014-11-18||/M" }))).toEqual(["2", "3", "4"]);
    });
    it("lt 2014-11-18||/M rounds down to 2014-11-01: excludes the entire month", async () => {
      expect(ids(await q({ lt: "2014-11-18||/M" }))).toEqual(["1"]);
    });
    it("lte 2014-11-18||/M rounds up to 2014-11-30T23:59:59.999: includes the entire month", async () => {
      expect(ids(await q({ lte: "2014-11-18||/M" }))).toEqual(["1", "2", "3"]);
    });
    it("format dd/MM/yyyy||yyyy: gte 01/01/2012, lte 2013 (lte rounds up to the end of 2013)", async () => {
      const es2 = esIndex([
        { timestamp: "2011-12-31T23:00:00Z" },
        { timestamp: "2012-01-01T00:00:00Z" },
        { timestamp: "2013-12-31T23:59:59Z" },
        { timestamp: "2014-01-01T00:00:00Z" },
      ]);
      const r = await es2.raw({
        query: { range: { timestamp: { gte: "01/01/2012", lte: "2013", format: "dd/MM/yyyy||yyyy" } } },
      });
      expect(ids(r)).toEqual(["2", "3"]);
      await es2.close();
    });
    it("time_zone +01:00 turns 2015-01-01 00:00:00 into 2014-12-31T23:00:00Z", async () => {
      const es2 = esIndex([{ timestamp: "2014-12-31T22:59:59Z" }, { timestamp: "2014-12-31T23:00:00Z" }]);
      const r = await es2.raw({
        query: {
          range: {
            timestamp: { gte: "2015-01-01 00:00:00", lte: "now", format: "yyyy-MM-dd HH:mm:ss", time_zone: "+01:00" },
          },
        },
      });
      expect(ids(r)).toEqual(["2"]);
      await es2.close();
    });
    it("now-1d/d is relative to the service clock (reference 5.6 common-options date-math)", async () => {
      const now = Date.parse("2017-06-01T12:00:00Z");
      const es2 = esIndex(
        [
          { timestamp: "2017-05-30T23:59:59Z" },
          { timestamp: "2017-05-31T00:00:00Z" },
          { timestamp: "2017-06-01T11:00:00Z" },
        ],
        now,
      );
      expect(ids(await es2.raw({ query: { range: { timestamp: { gte: "now-1d/d" } } } }))).toEqual(["2", "3"]);
      expect(ids(await es2.raw({ query: { range: { timestamp: { gte: "now-1d/d", lt: "now/d" } } } }))).toEqual(["2"]);
      await es2.close();
    });
  });

  describe("term-level and full-text queries on keyword and numeric fields", () => {
    const es = esIndex([
      { timestamp: T0, thingName: "kimchy", state: { user: "kimchy", age: 10, tags: ["a", "b"] } }, // 1
      { timestamp: T0 + 1, thingName: "kitty", state: { user: "kitty", age: 20 } }, // 2
      { timestamp: T0 + 2, thingName: "jane", state: { user: "jane", age: 30, tags: [] } }, // 3
      { timestamp: T0 + 3, thingName: "nobody", state: { user: null } }, // 4
    ]);
    afterAll(() => es.close());

    it("term (query-dsl-term-query) and term on a number given as a string", async () => {
      expect(ids(await es.search({ query: { term: { "state.user": "kimchy" } } }))).toEqual(["1"]);
      expect(ids(await es.search({ query: { term: { "state.age": "20" } } }))).toEqual(["2"]);
      expect(ids(await es.search({ query: { term: { "state.tags": "b" } } }))).toEqual(["1"]);
    });
    it("terms (query-dsl-terms-query)", async () => {
      expect(ids(await es.search({ query: { terms: { thingName: ["kimchy", "jane", "x"] } } }))).toEqual(["1", "3"]);
    });
    it("exists: null, [] and missing do not exist (query-dsl-exists-query)", async () => {
      expect(ids(await es.search({ query: { exists: { field: "state.user" } } }))).toEqual(["1", "2", "3"]);
      expect(ids(await es.search({ query: { exists: { field: "state.tags" } } }))).toEqual(["1"]);
      expect(ids(await es.search({ query: { bool: { must_not: { exists: { field: "state.user" } } } } }))).toEqual([
        "4",
      ]);
    });
    it("prefix ki and wildcard ki*y (query-dsl-prefix-query, query-dsl-wildcard-query)", async () => {
      expect(ids(await es.search({ query: { prefix: { "state.user": "ki" } } }))).toEqual(["1", "2"]);
      expect(ids(await es.search({ query: { wildcard: { "state.user": { value: "ki*y" } } } }))).toEqual(["1", "2"]);
      expect(ids(await es.search({ query: { wildcard: { "state.user": "j?ne" } } }))).toEqual(["3"]);
    });
    it("match on a keyword compares the whole value (query-dsl-match-query)", async () => {
      expect(ids(await es.search({ query: { match: { "state.user": "kitty" } } }))).toEqual(["2"]);
      expect(ids(await es.search({ query: { match: { "state.age": { query: 30 } } } }))).toEqual(["3"]);
    });
    it("ids (query-dsl-ids-query)", async () => {
      expect(ids(await es.search({ query: { ids: { type: "observation", values: ["1", "4", "100"] } } }))).toEqual([
        "1",
        "4",
      ]);
    });
    it("range on numbers and strings (query-dsl-range-query)", async () => {
      expect(ids(await es.search({ query: { range: { "state.age": { gte: 10, lt: 30 } } } }))).toEqual(["1", "2"]);
      expect(ids(await es.search({ query: { range: { "state.user": { gt: "jane", lte: "kitty" } } } }))).toEqual([
        "1",
        "2",
      ]);
    });
    it("bool must, should, must_not, minimum_should_match (query-dsl-bool-query, query-dsl-minimum-should-match)", async () => {
      const should = [
        { term: { "state.user": "kimchy" } },
        { term: { "state.age": 10 } },
        { term: { "state.tags": "a" } },
        { term: { "state.user": "kitty" } },
      ];
      expect(ids(await es.search({ query: { bool: { should } } }))).toEqual(["1", "2"]);
      expect(ids(await es.search({ query: { bool: { should, minimum_should_match: "75%" } } }))).toEqual(["1"]);
      expect(ids(await es.search({ query: { bool: { should, minimum_should_match: -1 } } }))).toEqual(["1"]);
      expect(ids(await es.search({ query: { bool: { should, minimum_should_match: "-75%" } } }))).toEqual(["1", "2"]);
      // With a must clause, should clauses are optional and only add to the score.
      const r = await es.search({
        query: { bool: { must: { range: { "state.age": { gte: 10 } } }, should: { term: { "state.user": "kitty" } } } },
      });
      expect(ids(r)).toEqual(["1", "2", "3"]);
      expect(r.hits.hits[0]).toMatchObject({ _id: "2", _score: 2 });
      expect(r.hits.max_score).toBe(2);
    });
    it("scoring with bool.filter: filter only scores 0, match_all 1.0, constant_score its boost (query-dsl-bool-query)", async () => {
      const f = await es.raw({
        query: { bool: { filter: [{ range: { timestamp: { gte: 0 } } }, { term: { "state.user": "jane" } }] } },
      });
      expect(f.hits.hits[0]._score).toBe(0);
      expect(f.hits.max_score).toBe(0);
      const m = await es.raw({
        query: {
          bool: {
            must: { match_all: {} },
            filter: [{ range: { timestamp: { gte: 0 } } }, { term: { "state.user": "jane" } }],
          },
        },
      });
      expect(m.hits.hits[0]._score).toBe(1);
      const c = await es.raw({
        query: {
          constant_score: {
            filter: { bool: { filter: [{ range: { timestamp: { gte: 0 } } }, { term: { "state.user": "jane" } }] } },
            boost: 1.2,
          },
        },
      });
      expect(c.hits.hits[0]._score).toBe(1.2);
    });
  });

  describe("geo queries (reference 5.6 query-dsl-geo-distance-query, geo-bounding-box-query, geo-polygon-query)", () => {
    const es = esIndex([
      { timestamp: T0, state: { location: { lat: 40, lon: -70 } } }, // 1: the pin
      { timestamp: T0 + 1, state: { location: "41,-70" } }, // 2: ~111 km north
      { timestamp: T0 + 2, state: { location: [-70, 42] } }, // 3: ~222 km north, [lon, lat]
      { timestamp: T0 + 3, state: { location: "drm3btev3e86" } }, // 4: geohash near 41.12,-71.34
    ]);
    afterAll(() => es.close());

    it("geo_distance 200km from 40,-70 in every geo_point form", async () => {
      expect(
        ids(
          await es.search({ query: { geo_distance: { distance: "200km", "state.location": { lat: 40, lon: -70 } } } }),
        ),
      ).toEqual(["1", "2", "4"]);
      expect(
        ids(await es.search({ query: { geo_distance: { distance: "12km", "state.location": "40,-70" } } })),
      ).toEqual(["1"]);
    });
    it("geo_bounding_box top_left 40.73,-74.1 bottom_right 40.01,-71.12 holds the geohash point", async () => {
      const box = { top_left: { lat: 41.73, lon: -74.1 }, bottom_right: { lat: 40.01, lon: -71.12 } };
      expect(ids(await es.search({ query: { geo_bounding_box: { "state.location": box } } }))).toEqual(["4"]);
      expect(
        ids(
          await es.search({
            query: { geo_bounding_box: { "state.location": { top: 42.5, left: -70.5, bottom: 40.5, right: -69.5 } } },
          }),
        ),
      ).toEqual(["2", "3"]);
    });
    it("geo_polygon", async () => {
      const points = [
        { lat: 40.5, lon: -71 },
        { lat: 40.5, lon: -69 },
        { lat: 43, lon: -69 },
        { lat: 43, lon: -71 },
      ];
      expect(ids(await es.search({ query: { geo_polygon: { "state.location": { points } } } }))).toEqual(["2", "3"]);
    });
  });

  describe("hits: shape, from/size, sort, _source, track_scores (reference 5.6 search-request-*)", () => {
    const es = esIndex([
      { timestamp: T0 + 2, thingName: "b", state: { temp: 1, obj: { a: 1, b: 2 } } },
      { timestamp: T0 + 1, thingName: "a", state: { temp: 3 } },
      { timestamp: T0 + 3, thingName: "c", thingType: "20", state: { temp: 2 } },
    ]);
    afterAll(() => es.close());

    it("answers took, timed_out, _shards and hits with _index, _type, _id, _score and _source", async () => {
      const r = await es.search({});
      expect(r).toMatchObject({ timed_out: false, _shards: { total: 2, successful: 2, skipped: 0, failed: 0 } });
      expect(typeof r.took).toBe("number");
      expect(r.hits.total).toBe(3);
      expect(r.hits.max_score).toBe(1);
      expect(r.hits.hits[0]).toEqual({
        _index: "observations-10",
        _type: "observation",
        _id: "1",
        _score: 1,
        _source: {
          thingName: "b",
          thingType: "10",
          domain: "acme",
          timestamp: T0 + 2,
          state: { temp: 1, obj: { a: 1, b: 2 } },
        },
      });
    });
    it("sort by a field: sort values in each hit, _score and max_score null (search-request-sort)", async () => {
      const r = await es.search({ sort: [{ timestamp: { order: "desc" } }], size: 2 });
      expect(r.hits.max_score).toBeNull();
      expect(r.hits.hits.map((h: { _id: string; sort: number[]; _score: null }) => [h._id, h.sort, h._score])).toEqual([
        ["3", [T0 + 3], null],
        ["1", [T0 + 2], null],
      ]);
    });
    it("track_scores keeps scores when sorting by a field; from pages on", async () => {
      const r = await es.search({ sort: ["thingName"], track_scores: true, from: 1, size: 1 });
      expect(r.hits.hits).toHaveLength(1);
      expect(r.hits.hits[0]).toMatchObject({ _id: "1", _score: 1, sort: ["b"] });
      expect(r.hits.max_score).toBe(1);
    });
    it("_source filtering: false, a pattern, includes/excludes (search-request-source-filtering)", async () => {
      expect((await es.search({ _source: false, size: 1 })).hits.hits[0]._source).toBeUndefined();
      expect((await es.search({ _source: "state.obj.*", size: 1 })).hits.hits[0]._source).toEqual({
        state: { obj: { a: 1, b: 2 } },
      });
      expect(
        (await es.search({ _source: { includes: ["state.*"], excludes: ["state.obj.b"] }, size: 1 })).hits.hits[0]
          ._source,
      ).toEqual({
        state: { temp: 1, obj: { a: 1 } },
      });
    });
    it("a query that would read more observations than the limit is refused, not answered half", async () => {
      await expect(es.raw({ query: { range: { timestamp: { gte: 0 } } } }, ["10", "20"], 2)).rejects.toThrow(
        /more than 2 observations/,
      );
      expect((await es.raw({ query: { range: { timestamp: { gte: 0 } } } }, ["10", "20"], 3)).hits.total).toBe(3);
    });

    it("the thing types in scope are the indices searched", async () => {
      const r = await es.raw({ query: { range: { timestamp: { gte: 0 } } } }, ["20"]);
      expect(r.hits.total).toBe(1);
      expect(r.hits.hits[0]._index).toBe("observations-20");
    });
  });
});
