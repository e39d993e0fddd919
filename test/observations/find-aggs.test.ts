import { afterAll, describe, expect, it } from "vitest";
import { ES_BACKENDS, T0 } from "./es.js";

describe.each(ES_BACKENDS)("on $name", ({ esIndex }) => {
  /**
   * Aggregations, each against the answer Elasticsearch 5.6 gives. Sources:
   *  - REST spec tests: elastic/elasticsearch rest-api-spec/src/main/resources/rest-api-spec/test/search.aggregation/*.yml
   *  - Reference: elastic.co/guide/en/elasticsearch/reference/5.6/search-aggregations-*.html
   * ES fields `int_field`, `str`, ... are observation resources `state.<field>` here.
   */

  // The four documents of the metric REST tests (100_avg ... 180_percentiles): int_field 1, 51, 101, 151.
  const metricDocs = [1, 51, 101, 151].map((n, i) => ({
    timestamp: T0 + i * 1000,
    state: { int_field: n, double_field: n, string_field: "foo" },
  }));

  describe("metric aggregations (rest-api-spec search.aggregation 1x0_*_metric.yml)", () => {
    const es = esIndex(metricDocs);
    afterAll(() => es.close());

    it("stats: Basic test (150_stats_metric.yml)", async () => {
      const r = await es.search({ aggs: { the_int_stats: { stats: { field: "state.int_field" } } } });
      expect(r.hits.total).toBe(4);
      expect(r.hits.hits).toHaveLength(4);
      expect(r.aggregations.the_int_stats).toEqual({ count: 4, min: 1, max: 151, avg: 76, sum: 304 });
    });

    it("stats: Filtered test, constant_score range gte 50 (150_stats_metric.yml)", async () => {
      const r = await es.search({
        query: { constant_score: { filter: { range: { "state.int_field": { gte: 50 } } } } },
        aggs: { s: { stats: { field: "state.int_field" } } },
      });
      expect(r.hits.total).toBe(3);
      expect(r.aggregations.s).toEqual({ count: 3, min: 51, max: 151, avg: 101, sum: 303 });
    });

    it("stats: Missing field with missing param (150_stats_metric.yml)", async () => {
      const r = await es.search({ aggs: { m: { stats: { field: "state.foo", missing: 1 } } } });
      expect(r.aggregations.m).toEqual({ count: 4, min: 1, max: 1, avg: 1, sum: 4 });
    });

    it("avg/min/max/sum/value_count (100_avg, 110_max, 120_min, 130_sum, 140_value_count)", async () => {
      const r = await es.search({
        size: 0,
        aggs: {
          a: { avg: { field: "state.int_field" } },
          mi: { min: { field: "state.int_field" } },
          ma: { max: { field: "state.int_field" } },
          su: { sum: { field: "state.int_field" } },
          vc: { value_count: { field: "state.int_field" } },
        },
      });
      expect(r.hits).toEqual({ total: 4, max_score: 0, hits: [] });
      expect(r.aggregations).toEqual({
        a: { value: 76 },
        mi: { value: 1 },
        ma: { value: 151 },
        su: { value: 304 },
        vc: { value: 4 },
      });
    });

    it("avg, min and max of nothing are null; sum is 0 (reference: metrics-avg/min/max, InternalMin/Max)", async () => {
      const r = await es.search({
        aggs: {
          a: { avg: { field: "state.none" } },
          mi: { min: { field: "state.none" } },
          su: { sum: { field: "state.none" } },
        },
      });
      expect(r.aggregations).toEqual({ a: { value: null }, mi: { value: null }, su: { value: 0 } });
    });

    it("extended_stats (160_extended_stats_metric.yml Basic test)", async () => {
      const r = await es.search({ aggs: { e: { extended_stats: { field: "state.int_field" } } } });
      const e = r.aggregations.e;
      expect(e.count).toBe(4);
      expect(e.sum_of_squares).toBe(35604);
      expect(e.variance).toBe(3125);
      expect(e.std_deviation).toBeCloseTo(55.90169943749474, 12);
      expect(e.std_deviation_bounds.upper).toBeCloseTo(187.80339887498948, 10);
      expect(e.std_deviation_bounds.lower).toBeCloseTo(-35.80339887498948, 10);
    });

    it("percentiles: Basic test, exact t-digest values (180_percentiles_tdigest_metric.yml)", async () => {
      const r = await es.search({ aggs: { p: { percentiles: { field: "state.int_field" } } } });
      expect(r.aggregations.p.values).toEqual({
        "1.0": 2.5,
        "5.0": 8.500000000000002,
        "25.0": 38.5,
        "50.0": 76.0,
        "75.0": 113.5,
        "95.0": 143.49999999999997,
        "99.0": 149.5,
      });
    });

    it("percentiles: Filtered test (180_percentiles_tdigest_metric.yml)", async () => {
      const r = await es.search({
        query: { constant_score: { filter: { range: { "state.int_field": { gte: 50 } } } } },
        aggs: { p: { percentiles: { field: "state.int_field" } } },
      });
      expect(r.aggregations.p.values).toEqual({
        "1.0": 52.0,
        "5.0": 56.0,
        "25.0": 76.0,
        "50.0": 101.0,
        "75.0": 126.0,
        "95.0": 146.0,
        "99.0": 150.0,
      });
    });

    it("percentiles: Non-keyed test (180_percentiles_tdigest_metric.yml)", async () => {
      const r = await es.search({
        aggs: { p: { percentiles: { field: "state.int_field", percents: [5.0, 25.0, 50.0], keyed: false } } },
      });
      expect(r.aggregations.p.values).toEqual([
        { key: 5.0, value: 8.500000000000002 },
        { key: 25.0, value: 38.5 },
        { key: 50.0, value: 76.0 },
      ]);
    });

    it("cardinality counts distinct values exactly below precision_threshold (170_cardinality_metric.yml)", async () => {
      const r = await es.search({
        aggs: { c: { cardinality: { field: "state.int_field" } }, s: { cardinality: { field: "state.string_field" } } },
      });
      expect(r.aggregations).toEqual({ c: { value: 4 }, s: { value: 1 } });
    });

    it("meta is echoed (150_stats_metric.yml Metadata test)", async () => {
      const r = await es.search({ aggs: { s: { meta: { foo: "bar" }, stats: { field: "state.int_field" } } } });
      expect(r.aggregations.s.meta).toEqual({ foo: "bar" });
    });

    it("top_hits: size and sort, hits in the search shape (200_top_hits_metric.yml)", async () => {
      const r = await es.search({
        size: 0,
        aggs: { t: { top_hits: { size: 2, sort: [{ "state.int_field": "desc" }] } } },
      });
      const hits = r.aggregations.t.hits;
      expect(hits.total).toBe(4);
      expect(hits.max_score).toBeNull();
      expect(hits.hits.map((h: { _id: string }) => h._id)).toEqual(["4", "3"]);
      expect(hits.hits[0]).toMatchObject({
        _index: "observations-10",
        _type: "observation",
        _score: null,
        sort: [151],
      });
    });
  });

  describe("histogram (rest-api-spec 10_histogram.yml; reference 5.6 search-aggregations-bucket-histogram-aggregation)", () => {
    const es = esIndex([1, 51, 101, 151].map((n, i) => ({ timestamp: T0 + i, state: { number: n } })));
    afterAll(() => es.close());

    it("Basic test: interval 50 gives keys 0, 50, 100, 150 with one doc each", async () => {
      const r = await es.search({ aggs: { histo: { histogram: { field: "state.number", interval: 50 } } } });
      expect(r.aggregations.histo.buckets).toEqual([
        { key: 0, doc_count: 1 },
        { key: 50, doc_count: 1 },
        { key: 100, doc_count: 1 },
        { key: 150, doc_count: 1 },
      ]);
    });

    it("empty buckets are filled between min and max (min_doc_count 0 default) and extended_bounds widen them", async () => {
      const r = await es.search({
        aggs: { h: { histogram: { field: "state.number", interval: 100, extended_bounds: { min: -100, max: 300 } } } },
      });
      expect(r.aggregations.h.buckets).toEqual([
        { key: -100, doc_count: 0 },
        { key: 0, doc_count: 2 },
        { key: 100, doc_count: 2 },
        { key: 200, doc_count: 0 },
        { key: 300, doc_count: 0 },
      ]);
    });

    it("keyed answers an object keyed by the Java double of the key; order by _count", async () => {
      const r = await es.search({
        aggs: { h: { histogram: { field: "state.number", interval: 100, keyed: true, min_doc_count: 1 } } },
      });
      expect(r.aggregations.h.buckets).toEqual({
        "0.0": { key: 0, doc_count: 2 },
        "100.0": { key: 100, doc_count: 2 },
      });
    });
  });

  describe("terms (rest-api-spec 20_terms.yml; reference 5.6 search-aggregations-bucket-terms-aggregation)", () => {
    const es = esIndex([
      { timestamp: T0, state: { str: "abc", number: 1 } },
      { timestamp: T0 + 1, state: { str: "abc", number: 1 } },
      { timestamp: T0 + 2, state: { str: "bcd", number: 3 } },
      { timestamp: T0 + 3, state: {} },
    ]);
    afterAll(() => es.close());

    it("String test: counts per term, _count desc, with the error and other fields", async () => {
      const r = await es.search({ aggs: { str_terms: { terms: { field: "state.str" } } } });
      expect(r.aggregations.str_terms).toEqual({
        doc_count_error_upper_bound: 0,
        sum_other_doc_count: 0,
        buckets: [
          { key: "abc", doc_count: 2 },
          { key: "bcd", doc_count: 1 },
        ],
      });
    });

    it("Boolean test: keys 1/0 with key_as_string true/false", async () => {
      const b = esIndex([true, false, true].map((v, i) => ({ timestamp: T0 + i, state: { boolean: v } })));
      const r = await b.search({ aggs: { b: { terms: { field: "state.boolean" } } } });
      expect(r.aggregations.b.buckets).toEqual([
        { key: 1, key_as_string: "true", doc_count: 2 },
        { key: 0, key_as_string: "false", doc_count: 1 },
      ]);
      await b.close();
    });

    it("Number keys stay numbers; size 1 leaves the rest in sum_other_doc_count", async () => {
      const r = await es.search({ aggs: { n: { terms: { field: "state.number", size: 1 } } } });
      expect(r.aggregations.n).toEqual({
        doc_count_error_upper_bound: 0,
        sum_other_doc_count: 1,
        buckets: [{ key: 1, doc_count: 2 }],
      });
    });

    it("missing puts documents without the field in their own bucket; order by _term", async () => {
      const r = await es.search({
        aggs: { s: { terms: { field: "state.str", missing: "N/A", order: { _term: "asc" } } } },
      });
      expect(r.aggregations.s.buckets).toEqual([
        { key: "N/A", doc_count: 1 },
        { key: "abc", doc_count: 2 },
        { key: "bcd", doc_count: 1 },
      ]);
    });

    it("min_doc_count drops rare terms; order by a sub-aggregation", async () => {
      const r = await es.search({
        aggs: {
          s: { terms: { field: "state.str", min_doc_count: 2 } },
          o: { terms: { field: "state.str", order: { m: "desc" } }, aggs: { m: { max: { field: "state.number" } } } },
        },
      });
      expect(r.aggregations.s.buckets).toEqual([{ key: "abc", doc_count: 2 }]);
      expect(r.aggregations.o.buckets.map((b: { key: string }) => b.key)).toEqual(["bcd", "abc"]);
    });
  });

  describe("date_histogram (reference 5.6 search-aggregations-bucket-datehistogram-aggregation)", () => {
    it("Time Zone example: day buckets in UTC and at -01:00", async () => {
      const es = esIndex([{ timestamp: "2015-10-01T00:30:00Z" }, { timestamp: "2015-10-01T01:30:00Z" }]);
      const utc = await es.search({ aggs: { by_day: { date_histogram: { field: "timestamp", interval: "day" } } } });
      expect(utc.aggregations.by_day.buckets).toEqual([
        { key_as_string: "2015-10-01T00:00:00.000Z", key: 1443657600000, doc_count: 2 },
      ]);
      const tz = await es.search({
        aggs: { by_day: { date_histogram: { field: "timestamp", interval: "day", time_zone: "-01:00" } } },
      });
      expect(tz.aggregations.by_day.buckets).toEqual([
        { key_as_string: "2015-09-30T00:00:00.000-01:00", key: 1443574800000, doc_count: 1 },
        { key_as_string: "2015-10-01T00:00:00.000-01:00", key: 1443661200000, doc_count: 1 },
      ]);
      await es.close();
    });

    it("Offset example: day buckets starting at 06:00", async () => {
      const es = esIndex([{ timestamp: "2015-10-01T05:30:00Z" }, { timestamp: "2015-10-01T06:30:00Z" }]);
      const r = await es.search({
        aggs: { by_day: { date_histogram: { field: "timestamp", interval: "day", offset: "+6h" } } },
      });
      expect(r.aggregations.by_day.buckets).toEqual([
        { key_as_string: "2015-09-30T06:00:00.000Z", key: 1443592800000, doc_count: 1 },
        { key_as_string: "2015-10-01T06:00:00.000Z", key: 1443679200000, doc_count: 1 },
      ]);
      await es.close();
    });

    it("Keys example: interval 1M with format yyyy-MM-dd", async () => {
      const es = esIndex([{ timestamp: "2005-01-15T00:00:00Z" }, { timestamp: "2005-03-02T00:00:00Z" }]);
      const r = await es.search({
        aggs: { sales_over_time: { date_histogram: { field: "timestamp", interval: "1M", format: "yyyy-MM-dd" } } },
      });
      expect(r.aggregations.sales_over_time.buckets).toEqual([
        { key_as_string: "2005-01-01", key: 1104537600000, doc_count: 1 },
        { key_as_string: "2005-02-01", key: 1107216000000, doc_count: 0 },
        { key_as_string: "2005-03-01", key: 1109635200000, doc_count: 1 },
      ]);
      await es.close();
    });

    it("fixed interval 90m, extended_bounds with date math, min_doc_count and order", async () => {
      const es = esIndex([{ timestamp: "2017-01-01T00:10:00Z" }, { timestamp: "2017-01-01T03:05:00Z" }]);
      const r = await es.search({
        aggs: {
          h: {
            date_histogram: {
              field: "timestamp",
              interval: "90m",
              extended_bounds: { min: "2017-01-01T00:00:00Z", max: "2017-01-01T00:00:00Z||+4h" },
            },
          },
          o: { date_histogram: { field: "timestamp", interval: "hour", min_doc_count: 1, order: { _key: "desc" } } },
        },
      });
      expect(r.aggregations.h.buckets.map((b: { doc_count: number }) => b.doc_count)).toEqual([1, 0, 1]);
      expect(r.aggregations.o.buckets.map((b: { key_as_string: string }) => b.key_as_string)).toEqual([
        "2017-01-01T03:00:00.000Z",
        "2017-01-01T00:00:00.000Z",
      ]);
      await es.close();
    });

    it("calendar units in a named zone: month buckets in Europe/Oslo", async () => {
      const es = esIndex([{ timestamp: "2017-01-31T23:30:00Z" }]);
      const r = await es.search({
        aggs: { m: { date_histogram: { field: "timestamp", interval: "month", time_zone: "Europe/Oslo" } } },
      });
      // 23:30Z on 31 January is 00:30 on 1 February in Oslo (UTC+1).
      expect(r.aggregations.m.buckets).toEqual([
        { key_as_string: "2017-02-01T00:00:00.000+01:00", key: Date.parse("2017-01-31T23:00:00Z"), doc_count: 1 },
      ]);
      await es.close();
    });
  });

  describe("range and date_range (reference 5.6 search-aggregations-bucket-range-aggregation, daterange-aggregation)", () => {
    const es = esIndex(
      [50, 150, 250, 99.5].map((p, i) => ({ timestamp: `2017-0${i + 1}-15T00:00:00Z`, state: { price: p } })),
    );
    afterAll(() => es.close());

    it("keys *-100.0, 100.0-200.0, 200.0-* with from and to; to is exclusive", async () => {
      const r = await es.search({
        aggs: {
          price_ranges: {
            range: { field: "state.price", ranges: [{ to: 100 }, { from: 100, to: 200 }, { from: 200 }] },
          },
        },
      });
      expect(r.aggregations.price_ranges.buckets).toEqual([
        { key: "*-100.0", to: 100, doc_count: 2 },
        { key: "100.0-200.0", from: 100, to: 200, doc_count: 1 },
        { key: "200.0-*", from: 200, doc_count: 1 },
      ]);
    });

    it("keyed with custom keys, and stats as a sub-aggregation", async () => {
      const r = await es.search({
        aggs: {
          p: {
            range: {
              field: "state.price",
              keyed: true,
              ranges: [
                { key: "cheap", to: 100 },
                { key: "expensive", from: 100 },
              ],
            },
            aggs: { s: { max: { field: "state.price" } } },
          },
        },
      });
      expect(r.aggregations.p.buckets).toEqual({
        cheap: { to: 100, doc_count: 2, s: { value: 99.5 } },
        expensive: { from: 100, doc_count: 2, s: { value: 250 } },
      });
    });

    it("date_range with date math and format MM-yyyy", async () => {
      const r = await es.search({
        aggs: {
          range: {
            date_range: { field: "timestamp", format: "MM-yyyy", ranges: [{ to: "03-2017" }, { from: "03-2017" }] },
          },
        },
      });
      expect(r.aggregations.range.buckets).toEqual([
        { key: "*-03-2017", to: Date.parse("2017-03-01T00:00:00Z"), to_as_string: "03-2017", doc_count: 2 },
        { key: "03-2017-*", from: Date.parse("2017-03-01T00:00:00Z"), from_as_string: "03-2017", doc_count: 2 },
      ]);
    });
  });

  describe("filter and filters (rest-api-spec 50_filter.yml, 220_filters_bucket.yml)", () => {
    const es = esIndex([
      { timestamp: T0, state: { int_field: 1, str: "a" } },
      { timestamp: T0 + 1, state: { int_field: 2, str: "b" } },
      { timestamp: T0 + 2, state: { int_field: 3, str: "b" } },
    ]);
    afterAll(() => es.close());

    it("filter: doc_count and sub-aggregations over the filtered docs", async () => {
      const r = await es.search({
        aggs: { f: { filter: { term: { "state.str": "b" } }, aggs: { a: { avg: { field: "state.int_field" } } } } },
      });
      expect(r.aggregations.f).toEqual({ doc_count: 2, a: { value: 2.5 } });
    });

    it("filters: named buckets as an object, anonymous as an array, other_bucket_key", async () => {
      const r = await es.search({
        aggs: {
          named: { filters: { filters: { a: { term: { "state.str": "a" } } }, other_bucket_key: "rest" } },
          anon: { filters: { filters: [{ term: { "state.str": "a" } }, { match_all: {} }] } },
        },
      });
      expect(r.aggregations.named).toEqual({ buckets: { a: { doc_count: 1 }, rest: { doc_count: 2 } } });
      expect(r.aggregations.anon).toEqual({ buckets: [{ doc_count: 1 }, { doc_count: 3 }] });
    });
  });

  describe("geo aggregations (reference 5.5/5.6 geobounds and geocentroid, museums example)", () => {
    const museums = [
      "52.374081,4.912350",
      "52.369219,4.901618",
      "52.371667,4.914722",
      "51.222900,4.405200",
      "48.861111,2.336389",
      "48.860000,2.327000",
    ];
    const es = esIndex(
      museums.map((loc, i) => ({
        timestamp: T0 + i,
        state: { location: loc, city: i < 3 ? "Amsterdam" : i === 3 ? "Antwerp" : "Paris" },
      })),
    );
    afterAll(() => es.close());

    it("geo_centroid of the six museums", async () => {
      const r = await es.search({ size: 0, aggs: { centroid: { geo_centroid: { field: "state.location" } } } });
      expect(r.aggregations.centroid.location.lat).toBeCloseTo(51.00982963107526, 6);
      expect(r.aggregations.centroid.location.lon).toBeCloseTo(3.9662130922079086, 6);
    });

    it("geo_bounds of the Paris museums, with the doc values' quantization", async () => {
      const r = await es.search({
        query: { term: { "state.city": "Paris" } },
        aggs: { viewport: { geo_bounds: { field: "state.location", wrap_longitude: true } } },
      });
      expect(r.aggregations.viewport.bounds).toEqual({
        top_left: { lat: 48.86111099738628, lon: 2.3269999679178 },
        bottom_right: { lat: 48.85999997612089, lon: 2.3363889567553997 },
      });
    });

    it("nested to any depth: terms > geo_centroid, terms > filter > stats", async () => {
      const r = await es.search({
        size: 0,
        aggs: {
          cities: {
            terms: { field: "state.city" },
            aggs: { f: { filter: { match_all: {} }, aggs: { c: { value_count: { field: "state.location" } } } } },
          },
        },
      });
      expect(r.aggregations.cities.buckets[0]).toEqual({
        key: "Amsterdam",
        doc_count: 3,
        f: { doc_count: 3, c: { value: 3 } },
      });
    });
  });

  describe("terms size their shards by the searched shards at every nesting level", () => {
    // Two thing types searched (two shards, as ES has an index per thing type): shard_size is
    // size * 1.5 + 10, so the six keys of one shard are all collected and the answer is exact.
    const counts = [6, 5, 4, 3, 2, 1];
    const es = esIndex(
      counts.flatMap((n, k) =>
        Array.from({ length: n }, (_, i) => ({ timestamp: T0 + k * 100 + i, state: { k: `k${k}`, n: 1 } })),
      ),
    );
    afterAll(() => es.close());
    const terms = { terms: { field: "state.k", size: 1 } };
    const exact = { doc_count_error_upper_bound: 0, sum_other_doc_count: 15, buckets: [{ key: "k0", doc_count: 6 }] };
    const enclosing: Record<string, Record<string, unknown>> = {
      terms: { terms: { field: "state.n" } },
      range: { range: { field: "state.n", ranges: [{ from: 0 }] } },
      filter: { filter: { match_all: {} } },
      filters: { filters: { filters: { all: { match_all: {} } } } },
      histogram: { histogram: { field: "state.n", interval: 1 } },
    };

    it("at the top level", async () => {
      expect((await es.search({ size: 0, aggs: { t: terms } })).aggregations.t).toEqual(exact);
    });

    it.each(Object.keys(enclosing))("under %s, and two levels down", async (kind) => {
      const outer = { ...enclosing[kind], aggs: { t: terms } };
      const r = await es.search({ size: 0, aggs: { o: outer, o2: { ...enclosing[kind], aggs: { o: outer } } } });
      const firstBucket = (agg: Record<string, unknown>): Record<string, unknown> => {
        const b = agg.buckets as Record<string, unknown>[] | Record<string, Record<string, unknown>> | undefined;
        if (b === undefined) return agg;
        return Array.isArray(b) ? b[0]! : Object.values(b)[0]!;
      };
      expect(firstBucket(r.aggregations.o).t).toEqual(exact);
      expect(firstBucket(firstBucket(r.aggregations.o2).o as Record<string, unknown>).t).toEqual(exact);
    });
  });
});
