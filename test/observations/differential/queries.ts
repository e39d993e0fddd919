/**
 * The corpus of the FIND differential test: every query clause and aggregation FIND
 * accepts, their options and their combinations, over the data set of data.ts.
 * Every request carries the timestamp range the interface requires. Hits are sorted
 * to a total order (timestamps are unique) unless the case is about the default
 * order, so that both engines must return the same page.
 */
import { START } from "./data.js";

type Json = Record<string, unknown>;

export interface Case {
  name: string;
  request: Json;
  /** Paths not compared, each with its reason in docs/observations.md (scores of query context). */
  ignore?: RegExp;
  /**
   * What OpenSearch is asked instead, where it departs from Elasticsearch 5.6's documented
   * answer, with the reason (the title names it).
   */
  openSearch?: { request: Json; why: string };
  /**
   * Every hit scores the same and the request has no sort: Elasticsearch returns such ties in
   * its segments' order, which merges change, so the hits are compared as a set (by `_id`).
   */
  tiesInAnyOrder?: boolean;
}

export interface Refusal {
  name: string;
  request: Json;
  /** What dms's message must name. */
  names: string;
  /** OpenSearch's status when it answers a request error with a server error (dms answers 400). */
  openSearchStatus?: number;
}

export const GEO_FIELDS = ["loc"];

const DAY = 86_400_000;
const TS = { range: { timestamp: { gte: START } } };
const BY_TIME = [{ timestamp: "asc" }];

/** A filter-context query: the required range and the clauses. */
const filtered = (...clauses: Json[]): Json => ({ bool: { filter: [TS, ...clauses] } });
/** A page of hits matching the clauses, in timestamp order. */
const hits = (clause: Json, extra: Json = {}): Json => ({ query: filtered(clause), size: 15, sort: BY_TIME, ...extra });
/** Aggregations only, over the clauses. */
const aggs = (a: Json, ...clauses: Json[]): Json => ({ size: 0, query: filtered(...clauses), aggs: a });

/**
 * Scores in query context: Elasticsearch scores term-level clauses with BM25 over index
 * statistics; dms scores with boosts (docs/observations.md, Scores). Which documents match,
 * their count and any explicit sort are still compared.
 */
const SCORES = /(^|\.)(_score|max_score)$/;
/**
 * Percentile values: ES 5.6 estimates with t-digest 3.0's AVL-tree digest, which dms
 * reproduces; OpenSearch 2.19 with t-digest 3.2's merging digest, which interpolates
 * differently on the same values (docs/observations.md). The keys and shape are compared.
 */
const PERCENTILE_VALUES = /^aggregations\..*\.values(\.[0-9.]+|\[\d+\]\.value)$/;
/** dms maps by value, so a geo point written `[lon, lat]` is two numbers to value_count (docs/observations.md). */
const LON_LAT_ARRAYS = /^aggregations\.m\.value$/;

const CASES: Case[] = [];
const add = (name: string, request: Json, ignore?: RegExp, openSearch?: Case["openSearch"]): void => {
  CASES.push({ name, request, ignore, openSearch });
};

// ---------------------------------------------------------------- queries
add("match_all with the range", { query: filtered({ match_all: {} }), size: 5, sort: BY_TIME });
add("match_none", { query: filtered({ match_none: {} }) });
for (const [field, value] of [
  ["thingName", "thing-07"],
  ["thingType", "20"],
  ["state.level", "warn"],
  ["state.level", "日本語"],
  ["state.level", "emoji 🚀"],
  ["state.level", "a b"],
  ["state.level", "ok"],
  ["state.tags", "ß"],
  ["state.parts.type", "pump"],
  ["state.reading.unit", "F"],
  ["state.count", 17],
  ["state.count", "17"],
  ["state.temp", 21.5],
  ["state.on", true],
  ["state.on", "false"],
  ["state.extreme", 9007199254740991],
] as [string, unknown][]) {
  add(`term ${field} = ${JSON.stringify(value)}`, hits({ term: { [field]: value } }));
}
add("term with value and boost", hits({ term: { "state.level": { value: "crit", boost: 2 } } }));
add("terms thingName", hits({ terms: { thingName: ["thing-01", "thing-02", "thing-49", "nope"] } }));
add("terms state.tags", hits({ terms: { "state.tags": ["red", "ñ"] } }));
add("terms state.count numbers", hits({ terms: { "state.count": [1, 2, 3, 500, 999] } }));
add("terms on a date", hits({ terms: { timestamp: [START + 5 * DAY] } }));
add("exists state.temp", hits({ exists: { field: "state.temp" } }));
add("exists state.tags (empty arrays do not exist)", hits({ exists: { field: "state.tags" } }));
add("exists state (an object field)", hits({ exists: { field: "state" } }));
add("exists state.parts (array of objects)", hits({ exists: { field: "state.parts" } }));
add("exists state.reading (object)", hits({ exists: { field: "state.reading" } }));
add("exists state.parts.type", hits({ exists: { field: "state.parts.type" } }));
add("exists on a field nobody has", hits({ exists: { field: "state.nothing" } }));
add("must_not exists state", {
  query: { bool: { filter: TS, must_not: { exists: { field: "state" } } } },
  size: 30,
  sort: BY_TIME,
});
add("must_not exists state.level", {
  query: { bool: { filter: TS, must_not: { exists: { field: "state.level" } } } },
  size: 30,
  sort: BY_TIME,
});
add("prefix state.level", hits({ prefix: { "state.level": "c" } }));
add("prefix thingName with value", hits({ prefix: { thingName: { value: "thing-1" } } }));
add("prefix unicode", hits({ prefix: { "state.level": "Ün" } }));
add("wildcard state.level *r*", hits({ wildcard: { "state.level": "*r*" } }));
add("wildcard ? and *", hits({ wildcard: { thingName: { value: "thing-?3" } } }));
add("wildcard state.tags", hits({ wildcard: { "state.tags": "gr*" } }));
add("match keyword whole value", hits({ match: { "state.level": "a b" } }));
add("match number", hits({ match: { "state.count": { query: 42 } } }));
add("match thingName", hits({ match: { thingName: "thing-33" } }));
add("ids", hits({ ids: { values: ["1", "2", "3", "100", "19999", "999999"] } }));
add("ids with type", hits({ ids: { type: "observation", values: ["5", "6"] } }));

// range
add("range count gte/lt", hits({ range: { "state.count": { gte: 100, lt: 110 } } }));
add("range count gt/lte", hits({ range: { "state.count": { gt: 990, lte: 999 } } }));
add(
  "range temp from/to include_upper false",
  hits({ range: { "state.temp": { from: -20, to: -19, include_upper: false } } }),
);
add(
  "range temp from/to include_lower false",
  hits({ range: { "state.temp": { from: 39, to: 40, include_lower: false } } }),
);
add("range on string bounds of a number field", hits({ range: { "state.count": { gte: "998" } } }));
add("range keyword", hits({ range: { "state.level": { gte: "o", lt: "x" } } }));
add("range keyword unicode", hits({ range: { "state.level": { gt: "z" } } }));
add("range extreme", hits({ range: { "state.extreme": { gt: 1e300 } } }));
add("range extreme negative", hits({ range: { "state.extreme": { lt: -1e15 } } }));
add("range nested value", hits({ range: { "state.parts.v": { gte: 98 } } }));
add("range date iso", hits({ range: { timestamp: { gte: "2026-10-25T00:59:00Z", lt: "2026-10-25T01:05:00Z" } } }));
add(
  "range date math rounding gte ||/d",
  hits({ range: { timestamp: { gte: "2026-10-25T13:00:00Z||/d", lt: "2026-10-25T00:30:00Z" } } }),
);
add(
  "range date math gt ||/d rounds up",
  hits({ range: { timestamp: { gt: "2026-10-24||/d", lte: "2026-10-25T00:10:00Z" } } }),
);
add(
  "range date math lte ||/h rounds up",
  hits({ range: { timestamp: { gte: "2026-10-26T10:00:00Z", lte: "2026-10-26T10:00:00Z||/h" } } }),
);
add(
  "range date math +1d-2h",
  hits({ range: { timestamp: { gte: "2026-10-24T00:00:00Z||+1d-2h", lt: "2026-10-24T00:00:00Z||+1d" } } }),
);
add("range date math now (after all data)", { query: filtered({ range: { timestamp: { lt: "now" } } }), size: 0 });
add(
  "range date format yyyy-MM-dd HH:mm with time_zone Oslo",
  hits({
    range: {
      timestamp: {
        gte: "2026-10-25 02:00",
        lt: "2026-10-25 03:00",
        format: "yyyy-MM-dd HH:mm",
        time_zone: "Europe/Oslo",
      },
    },
  }),
);
add(
  "range date format dd/MM/yyyy||yyyy",
  {
    query: filtered({ range: { timestamp: { gte: "30/10/2026", lte: "2026", format: "dd/MM/yyyy||yyyy" } } }),
    size: 0,
  },
  undefined,
  {
    // ES 5.6's range-query reference: lte "2013" with format yyyy rounds up to the end of 2013.
    // OpenSearch 2.19's java.time parser rounds a year alone down, so it is given the end of the year.
    why: "lte of a year alone rounds up to its end (ES 5.6 reference; OpenSearch rounds it down)",
    request: {
      query: filtered({
        range: {
          timestamp: {
            gte: "30/10/2026",
            lte: "2026-12-31T23:59:59.999Z",
            format: "dd/MM/uuuu||strict_date_optional_time",
          },
        },
      }),
      size: 0,
    },
  },
);
add(
  "range date epoch_millis",
  hits({
    range: { timestamp: { gte: String(START + DAY), lt: String(START + DAY + 3_600_000), format: "epoch_millis" } },
  }),
);
add(
  "range date epoch_second",
  hits({
    range: {
      timestamp: {
        gte: String((START + 2 * DAY) / 1000),
        lt: String((START + 2 * DAY + 3_600_000) / 1000),
        format: "epoch_second",
      },
    },
  }),
);
add("range date time_zone offset, lte rounds up the day", {
  query: filtered({ range: { timestamp: { gte: "2026-10-26", lte: "2026-10-27", time_zone: "-05:00" } } }),
  size: 0,
});
add("range date time_zone New York across its DST end", {
  query: filtered({
    range: { timestamp: { gte: "2026-11-01T00:00:00", lt: "2026-11-02T00:00:00", time_zone: "America/New_York" } },
  }),
  size: 0,
});
add("range date rounding with time_zone ||/d", {
  query: filtered({
    range: { timestamp: { gte: "2026-10-25T12:00:00||/d", lte: "2026-10-25T12:00:00||/d", time_zone: "Europe/Oslo" } },
  }),
  size: 0,
});

// bool
add(
  "bool should min 1",
  hits({ bool: { should: [{ term: { "state.level": "ok" } }, { term: { "state.level": "OK" } }] } }),
);
add(
  "bool should minimum_should_match 2",
  hits({
    bool: {
      should: [{ term: { "state.level": "ok" } }, { term: { "state.on": true } }, { term: { "state.tags": "red" } }],
      minimum_should_match: 2,
    },
  }),
);
add(
  "bool should minimum_should_match 67%",
  hits({
    bool: {
      should: [{ term: { "state.level": "ok" } }, { term: { "state.on": true } }, { term: { "state.tags": "red" } }],
      minimum_should_match: "67%",
    },
  }),
);
add(
  "bool should minimum_should_match -1",
  hits({
    bool: {
      should: [{ term: { "state.level": "ok" } }, { term: { "state.on": true } }, { term: { "state.tags": "red" } }],
      minimum_should_match: -1,
    },
  }),
);
add(
  "bool must_not",
  hits({ bool: { must_not: [{ term: { "state.level": "ok" } }, { exists: { field: "state.loc" } }] } }),
);
add(
  "bool nested bools",
  hits({
    bool: {
      must: {
        bool: {
          should: [{ term: { thingType: "10" } }, { bool: { filter: { range: { "state.count": { lt: 5 } } } } }],
        },
      },
      must_not: { term: { "state.on": false } },
    },
  }),
);
add("constant_score with boost", {
  query: { constant_score: { filter: filtered({ term: { "state.level": "crit" } }), boost: 3 } },
  size: 10,
  sort: BY_TIME,
  track_scores: true,
});
add("constant_score scores without sort", {
  query: { constant_score: { filter: filtered({ term: { thingName: "thing-05" } }), boost: 1.5 } },
  size: 200,
});
add("match_all scores 1 in must", {
  query: { bool: { must: { match_all: {} }, filter: [TS, { term: { thingName: "thing-09" } }] } },
  size: 500,
});
add("filter-only bool scores 0", { query: filtered({ term: { thingName: "thing-10" } }), size: 500 });
for (const c of CASES.slice(-2)) c.tiesInAnyOrder = true;
add(
  "query context term (scores differ by design)",
  { query: { bool: { must: { term: { "state.level": "warn" } }, filter: TS } }, size: 20, sort: BY_TIME },
  SCORES,
);
add(
  "query context should with must",
  {
    query: { bool: { must: TS, should: { term: { "state.on": true } } } },
    size: 20,
    sort: [{ "state.count": "desc" }, ...BY_TIME],
  },
  SCORES,
);

// geo
add("geo_distance km", hits({ geo_distance: { distance: "30km", "state.loc": { lat: 60, lon: 11 } } }));
add("geo_distance string point and miles", hits({ geo_distance: { distance: "10mi", "state.loc": "59.9,10.7" } }));
add(
  "geo_distance array point, unit",
  hits({ geo_distance: { distance: 20000, unit: "m", "state.loc": [11.5, 60.5] } }),
);
add("geo_distance geohash point", hits({ geo_distance: { distance: "50km", "state.loc": "u4xsu" } }));
add(
  "geo_bounding_box top_left/bottom_right",
  hits({
    geo_bounding_box: { "state.loc": { top_left: { lat: 60.2, lon: 10.1 }, bottom_right: { lat: 59.8, lon: 10.6 } } },
  }),
);
add(
  "geo_bounding_box top/left/bottom/right",
  hits({ geo_bounding_box: { "state.loc": { top: 61, left: 11.9, bottom: 60.9, right: 12 } } }),
);
add(
  "geo_bounding_box top_right/bottom_left strings",
  hits({ geo_bounding_box: { "state.loc": { top_right: "60.5,11", bottom_left: "60,10.5" } } }),
);
add(
  "geo_bounding_box geohash corners",
  hits({ geo_bounding_box: { "state.loc": { top_left: "u4xs", bottom_right: "u4xs" } } }),
);
add(
  "geo_polygon",
  hits({
    geo_polygon: {
      "state.loc": {
        points: [
          { lat: 59, lon: 10 },
          { lat: 61, lon: 10 },
          { lat: 61, lon: 10.5 },
        ],
      },
    },
  }),
);
add("geo_polygon string points", hits({ geo_polygon: { "state.loc": { points: ["59,10", "60,12", "59,12"] } } }));

// ---------------------------------------------------------------- hits: sort, paging, _source
add(
  "sort count desc then time",
  hits({ exists: { field: "state.count" } }, { sort: [{ "state.count": "desc" }, ...BY_TIME] }),
);
add(
  "sort temp asc missing last",
  hits({ term: { thingName: "thing-03" } }, { sort: [{ "state.temp": "asc" }, ...BY_TIME], size: 400 }),
);
add(
  "sort temp desc missing last",
  hits({ term: { thingName: "thing-03" } }, { sort: [{ "state.temp": { order: "desc" } }, ...BY_TIME], size: 400 }),
);
add(
  "sort temp asc missing _first",
  hits(
    { term: { thingName: "thing-04" } },
    { sort: [{ "state.temp": { order: "asc", missing: "_first" } }, ...BY_TIME], size: 30 },
  ),
);
add(
  "sort temp desc missing _first",
  hits(
    { term: { thingName: "thing-04" } },
    { sort: [{ "state.temp": { order: "desc", missing: "_first" } }, ...BY_TIME], size: 30 },
  ),
);
add(
  "sort level (keyword) asc with missing",
  hits({ term: { thingName: "thing-06" } }, { sort: [{ "state.level": "asc" }, ...BY_TIME], size: 400 }),
);
add(
  "sort level desc missing _first",
  hits(
    { term: { thingName: "thing-06" } },
    { sort: [{ "state.level": { order: "desc", missing: "_first" } }, ...BY_TIME], size: 40 },
  ),
);
add(
  "sort multi-valued mode min",
  hits(
    { exists: { field: "state.parts" } },
    { sort: [{ "state.parts.v": { order: "asc", mode: "min" } }, ...BY_TIME] },
  ),
);
add(
  "sort multi-valued mode max",
  hits(
    { exists: { field: "state.parts" } },
    { sort: [{ "state.parts.v": { order: "asc", mode: "max" } }, ...BY_TIME] },
  ),
);
add(
  "sort multi-valued mode avg",
  hits(
    { exists: { field: "state.parts" } },
    { sort: [{ "state.parts.v": { order: "desc", mode: "avg" } }, ...BY_TIME] },
  ),
);
add(
  "sort multi-valued mode sum",
  hits(
    { exists: { field: "state.parts" } },
    { sort: [{ "state.parts.v": { order: "desc", mode: "sum" } }, ...BY_TIME] },
  ),
);
add(
  "sort multi-valued keyword desc",
  hits({ exists: { field: "state.tags" } }, { sort: [{ "state.tags": "desc" }, ...BY_TIME] }),
);
add(
  "sort boolean",
  hits({ term: { thingName: "thing-08" } }, { sort: [{ "state.on": "desc" }, ...BY_TIME], size: 50 }),
);
add("sort timestamp desc", hits({ match_all: {} }, { sort: [{ timestamp: "desc" }] }));
add("sort timestamp as string", hits({ match_all: {} }, { sort: ["timestamp"] }));
add(
  "sort extreme asc",
  hits({ exists: { field: "state.extreme" } }, { sort: [{ "state.extreme": "asc" }, ...BY_TIME], size: 50 }),
);
add("sort with track_scores", hits({ term: { "state.level": "crit" } }, { track_scores: true }));
add("sort _score then time", hits({ term: { "state.level": "crit" } }, { sort: ["_score", ...BY_TIME] }));
add("paging from 30 size 10", hits({ term: { thingType: "30" } }, { from: 30, size: 10 }));
add("paging past the end", hits({ term: { thingName: "thing-11" } }, { from: 9990, size: 10 }));
add("size 0 with hits total", { query: filtered({ term: { thingType: "10" } }), size: 0 });
add("_source false", hits({ term: { thingName: "thing-12" } }, { _source: false }));
add("_source string pattern", hits({ term: { thingName: "thing-12" } }, { _source: "state.temp" }));
add("_source list", hits({ term: { thingName: "thing-12" } }, { _source: ["thingName", "state.level"] }));
add("_source wildcard", hits({ term: { thingName: "thing-12" } }, { _source: ["state.t*"] }));
add("_source includes object", hits({ term: { thingName: "thing-13" } }, { _source: { includes: ["state.reading"] } }));
add(
  "_source excludes",
  hits({ term: { thingName: "thing-13" } }, { _source: { excludes: ["state.parts", "domain"] } }),
);
add(
  "_source includes inside array of objects",
  hits({ term: { thingName: "thing-13" } }, { _source: { includes: ["state.parts.type"] } }),
);
add(
  "_source excludes inside array of objects",
  hits({ term: { thingName: "thing-13" } }, { _source: { excludes: ["state.parts.state"] } }),
);
add(
  "_source includes and excludes",
  hits(
    { term: { thingName: "thing-14" } },
    { _source: { includes: ["state.*"], excludes: ["state.parts.v", "state.loc"] } },
  ),
);
add(
  "_source include/exclude singular keys",
  hits({ term: { thingName: "thing-14" } }, { _source: { include: "state", exclude: "state.tags" } }),
);
add("_source includes a field nobody has", hits({ term: { thingName: "thing-14" } }, { _source: ["state.nothing"] }));
add("_source *.type", hits({ term: { thingName: "thing-15" } }, { _source: ["*.type"] }));

// ---------------------------------------------------------------- metrics
for (const field of ["state.temp", "state.count", "state.parts.v", "state.reading.value", "state.on", "timestamp"]) {
  for (const kind of ["avg", "min", "max", "sum", "stats", "extended_stats", "value_count"]) {
    add(`${kind} of ${field}`, aggs({ m: { [kind]: { field } } }));
  }
}
add("value_count of a repeated keyword", aggs({ m: { value_count: { field: "state.tags" } } }));
add("value_count of a keyword", aggs({ m: { value_count: { field: "state.level" } } }));
add("value_count of geo points", aggs({ m: { value_count: { field: "state.loc" } } }), LON_LAT_ARRAYS);
add(
  "value_count of repeated keyword per thing",
  aggs({
    t: {
      terms: { field: "thingName", size: 5, order: { _key: "asc" } },
      aggs: { m: { value_count: { field: "state.tags" } } },
    },
  }),
);
add("min/max of extreme", aggs({ a: { min: { field: "state.extreme" } }, b: { max: { field: "state.extreme" } } }));
add("avg with missing", aggs({ m: { avg: { field: "state.temp", missing: 100 } } }));
add("sum with missing", aggs({ m: { sum: { field: "state.count", missing: 1 } } }));
add("stats with missing", aggs({ m: { stats: { field: "state.temp", missing: 0 } } }));
add("extended_stats sigma 3", aggs({ m: { extended_stats: { field: "state.count", sigma: 3 } } }));
add("max of timestamp with format", aggs({ m: { max: { field: "timestamp", format: "yyyy-MM-dd" } } }));
add(
  "metrics of nothing",
  aggs(
    {
      a: { avg: { field: "state.temp" } },
      b: { min: { field: "state.temp" } },
      c: { stats: { field: "state.temp" } },
      d: { sum: { field: "state.temp" } },
      e: { value_count: { field: "state.temp" } },
    },
    { match_none: {} },
  ),
);
add("extended_stats of nothing", aggs({ e: { extended_stats: { field: "state.temp" } } }, { match_none: {} }));
add("cardinality thingName", aggs({ c: { cardinality: { field: "thingName" } } }));
add("cardinality tags", aggs({ c: { cardinality: { field: "state.tags" } } }));
add("cardinality count", aggs({ c: { cardinality: { field: "state.count" } } }));
add("cardinality level with missing", aggs({ c: { cardinality: { field: "state.level", missing: "none" } } }));
add(
  "percentiles of count, small set",
  aggs(
    { p: { percentiles: { field: "state.count" } } },
    { term: { thingName: "thing-16" } },
    { range: { timestamp: { lt: START + DAY } } },
  ),
  PERCENTILE_VALUES,
);
add(
  "percentiles percents keyed false",
  aggs(
    { p: { percentiles: { field: "state.temp", percents: [10, 50, 90], keyed: false } } },
    { term: { thingName: "thing-17" } },
    { range: { timestamp: { lt: START + DAY } } },
  ),
  PERCENTILE_VALUES,
);
add(
  "percentiles of timestamp",
  aggs(
    { p: { percentiles: { field: "timestamp", percents: [50] } } },
    { term: { thingName: "thing-18" } },
    { range: { timestamp: { lt: START + DAY } } },
  ),
);
add("geo_bounds", aggs({ g: { geo_bounds: { field: "state.loc" } } }));
add("geo_bounds wrap_longitude false", aggs({ g: { geo_bounds: { field: "state.loc", wrap_longitude: false } } }));
add(
  "geo_bounds of geohash points",
  aggs({ g: { geo_bounds: { field: "state.loc" } } }, { term: { thingName: "thing-19" } }),
);
add("geo_bounds of nothing", aggs({ g: { geo_bounds: { field: "state.loc" } } }, { match_none: {} }));
add("geo_centroid", aggs({ g: { geo_centroid: { field: "state.loc" } } }));
add(
  "geo_centroid per thing type",
  aggs({ t: { terms: { field: "thingType" }, aggs: { g: { geo_centroid: { field: "state.loc" } } } } }),
);
add(
  "top_hits sorted with _source",
  aggs({
    t: {
      terms: { field: "thingType" },
      aggs: { h: { top_hits: { size: 2, sort: [{ timestamp: "desc" }], _source: ["state.level"] } } },
    },
  }),
);
add(
  "top_hits from",
  aggs({ h: { top_hits: { size: 3, from: 2, sort: BY_TIME } } }, { term: { thingName: "thing-20" } }),
);
add("top_hits default order", aggs({ h: { top_hits: { size: 2 } } }, { ids: { values: ["7"] } }));
add(
  "meta on aggregations",
  aggs({
    m: { avg: { field: "state.temp" }, meta: { color: "blue" } },
    t: { terms: { field: "thingType" }, meta: { n: 1 } },
  }),
);

// ---------------------------------------------------------------- terms
add("terms thingName default", aggs({ t: { terms: { field: "thingName" } } }));
add("terms size 3", aggs({ t: { terms: { field: "thingName", size: 3 } } }));
add("terms level unicode keys", aggs({ t: { terms: { field: "state.level", size: 20 } } }));
add("terms order _key asc", aggs({ t: { terms: { field: "state.level", order: { _key: "asc" } } } }));
add("terms order _term desc", aggs({ t: { terms: { field: "state.level", order: { _term: "desc" } } } }));
add("terms order _count asc", aggs({ t: { terms: { field: "thingName", size: 5, order: { _count: "asc" } } } }));
add(
  "terms order by sub metric",
  aggs({
    t: {
      terms: { field: "thingName", size: 5, order: { avg_temp: "desc" } },
      aggs: { avg_temp: { avg: { field: "state.temp" } } },
    },
  }),
);
add(
  "terms order by stats metric",
  aggs({
    t: { terms: { field: "thingName", size: 5, order: { s: "asc" } }, aggs: { s: { max: { field: "state.count" } } } },
  }),
);
add(
  "terms order by multi-value metric path",
  aggs({
    t: {
      terms: { field: "thingName", size: 4, order: { "s.avg": "desc" } },
      aggs: { s: { stats: { field: "state.temp" } } },
    },
  }),
);
add(
  "terms order by sub agg and _key",
  aggs({
    t: {
      terms: { field: "thingType", order: [{ c: "desc" }, { _key: "asc" }] },
      aggs: { c: { cardinality: { field: "thingName" } } },
    },
  }),
);
add("terms tags (repeats count one per doc)", aggs({ t: { terms: { field: "state.tags" } } }));
add("terms numbers", aggs({ t: { terms: { field: "state.parts.v", size: 5 } } }));
add("terms doubles", aggs({ t: { terms: { field: "state.temp", size: 3 } } }));
add("terms booleans", aggs({ t: { terms: { field: "state.on" } } }));
add("terms timestamp", aggs({ t: { terms: { field: "timestamp", size: 2 } } }, { term: { thingName: "thing-21" } }));
add("terms min_doc_count", aggs({ t: { terms: { field: "state.parts.v", min_doc_count: 200 } } }));
add("terms missing", aggs({ t: { terms: { field: "state.level", missing: "(none)", size: 20 } } }));
add("terms include regexp", aggs({ t: { terms: { field: "thingName", include: "thing-1.*" } } }));
add("terms exclude regexp", aggs({ t: { terms: { field: "state.level", exclude: "o.*|O.*" } } }));
add("terms include array", aggs({ t: { terms: { field: "state.tags", include: ["red", "ß"] } } }));
add(
  "terms include and exclude arrays",
  aggs({ t: { terms: { field: "thingName", include: ["thing-01", "thing-02", "thing-03"], exclude: ["thing-02"] } } }),
);
add(
  "terms include and exclude regexps",
  aggs({ t: { terms: { field: "thingName", include: "thing-0.*", exclude: "thing-0[5-9]" } } }),
);
add(
  "terms nested object field",
  aggs({ t: { terms: { field: "state.parts.type" }, aggs: { s: { terms: { field: "state.parts.state" } } } } }),
);
add(
  "terms shard_size and execution_hint",
  aggs({ t: { terms: { field: "thingName", size: 3, shard_size: 100, execution_hint: "map" } } }),
);
add(
  "terms show_term_doc_count_error",
  aggs({ t: { terms: { field: "thingName", size: 3, show_term_doc_count_error: true } } }),
);
add(
  "terms of terms",
  aggs({ a: { terms: { field: "thingType" }, aggs: { b: { terms: { field: "state.level", size: 3 } } } } }),
);

// ---------------------------------------------------------------- histograms
add("histogram count 100", aggs({ h: { histogram: { field: "state.count", interval: 100 } } }));
add("histogram temp 7.5 with offset", aggs({ h: { histogram: { field: "state.temp", interval: 7.5, offset: 2 } } }));
add(
  "histogram min_doc_count 1",
  aggs(
    { h: { histogram: { field: "state.parts.v", interval: 10, min_doc_count: 1 } } },
    { term: { thingName: "thing-22" } },
  ),
);
add(
  "histogram extended_bounds",
  aggs({ h: { histogram: { field: "state.count", interval: 250, extended_bounds: { min: -500, max: 1500 } } } }),
);
add(
  "histogram order _count desc",
  aggs({ h: { histogram: { field: "state.count", interval: 200, order: { _count: "desc" } } } }),
);
add("histogram keyed", aggs({ h: { histogram: { field: "state.count", interval: 250, keyed: true } } }));
add("histogram missing", aggs({ h: { histogram: { field: "state.temp", interval: 20, missing: 0 } } }));
add(
  "histogram with sub stats",
  aggs({ h: { histogram: { field: "state.count", interval: 500 }, aggs: { s: { stats: { field: "state.temp" } } } } }),
);
for (const interval of ["year", "quarter", "month", "week", "day", "1d", "hour", "1h", "12h", "6h", "90m", "2d"]) {
  add(`date_histogram ${interval}`, aggs({ h: { date_histogram: { field: "timestamp", interval } } }));
}
for (const zone of ["Europe/Oslo", "America/New_York", "+05:30", "-08:00"]) {
  for (const interval of ["hour", "day", "week", "month", "12h", "3h", "30m"]) {
    const narrow = interval === "30m" || interval === "hour" || interval === "3h";
    const window = zone === "America/New_York" ? "2026-11-01T00:00:00Z" : "2026-10-24T18:00:00Z";
    const clauses = narrow ? [{ range: { timestamp: { gte: window, lt: `${window}||+18h` } } }] : [];
    add(
      `date_histogram ${interval} time_zone ${zone}`,
      aggs({ h: { date_histogram: { field: "timestamp", interval, time_zone: zone } } }, ...clauses),
    );
  }
}
add(
  "date_histogram offset +6h",
  aggs({ h: { date_histogram: { field: "timestamp", interval: "day", offset: "+6h" } } }),
);
add(
  "date_histogram offset -30m with zone",
  aggs(
    { h: { date_histogram: { field: "timestamp", interval: "hour", offset: "-30m", time_zone: "Europe/Oslo" } } },
    { range: { timestamp: { gte: "2026-10-24T22:00:00Z", lt: "2026-10-25T04:00:00Z" } } },
  ),
);
add(
  "date_histogram format",
  aggs({ h: { date_histogram: { field: "timestamp", interval: "day", format: "yyyy-MM-dd" } } }),
);
add(
  "date_histogram format with zone",
  aggs({
    h: {
      date_histogram: {
        field: "timestamp",
        interval: "day",
        format: "yyyy-MM-dd'T'HH:mmZZ",
        time_zone: "America/New_York",
      },
    },
  }),
);
add(
  "date_histogram min_doc_count 1 and extended_bounds",
  aggs({
    h: {
      date_histogram: {
        field: "timestamp",
        interval: "day",
        min_doc_count: 0,
        extended_bounds: { min: "2026-10-20", max: "2026-11-05" },
      },
    },
  }),
);
add(
  "date_histogram extended_bounds date math",
  aggs({
    h: {
      date_histogram: {
        field: "timestamp",
        interval: "day",
        extended_bounds: { min: "2026-10-22||-2d", max: "2026-11-03||+1d" },
      },
    },
  }),
);
add(
  "date_histogram order _count desc",
  aggs({ h: { date_histogram: { field: "timestamp", interval: "day", order: { _count: "desc" } } } }),
);
add("date_histogram keyed", aggs({ h: { date_histogram: { field: "timestamp", interval: "week", keyed: true } } }));
add(
  "date_histogram sparse min_doc_count 1",
  aggs(
    { h: { date_histogram: { field: "timestamp", interval: "hour", min_doc_count: 1 } } },
    { term: { thingName: "thing-23" } },
  ),
);
add(
  "date_histogram with terms and avg",
  aggs({
    h: {
      date_histogram: { field: "timestamp", interval: "day", time_zone: "Europe/Oslo" },
      aggs: { t: { terms: { field: "thingType" }, aggs: { a: { avg: { field: "state.temp" } } } } },
    },
  }),
);
add(
  "date_histogram with percentiles",
  aggs(
    {
      h: {
        date_histogram: { field: "timestamp", interval: "hour" },
        aggs: { p: { percentiles: { field: "state.count", percents: [50] } } },
      },
    },
    { term: { thingName: "thing-24" } },
    { range: { timestamp: { lt: START + DAY } } },
  ),
);

// ---------------------------------------------------------------- range buckets, filters
add(
  "range agg",
  aggs({ r: { range: { field: "state.count", ranges: [{ to: 100 }, { from: 100, to: 500 }, { from: 500 }] } } }),
);
add(
  "range agg keys and keyed",
  aggs({
    r: {
      range: {
        field: "state.temp",
        keyed: true,
        ranges: [
          { key: "cold", to: 0 },
          { key: "warm", from: 0 },
        ],
      },
    },
  }),
);
add(
  "range agg unsorted ranges",
  aggs({ r: { range: { field: "state.count", ranges: [{ from: 500 }, { from: 0, to: 10 }, { to: 5 }] } } }),
);
add("range agg decimals", aggs({ r: { range: { field: "state.temp", ranges: [{ from: -0.5, to: 10.25 }] } } }));
add(
  "range agg with sub",
  aggs({
    r: {
      range: { field: "state.count", ranges: [{ to: 500 }, { from: 500 }] },
      aggs: { t: { terms: { field: "state.level", size: 2 } } },
    },
  }),
);
add(
  "date_range",
  aggs({
    r: {
      date_range: {
        field: "timestamp",
        ranges: [{ to: "2026-10-25" }, { from: "2026-10-25", to: "2026-11-01" }, { from: "2026-11-01" }],
      },
    },
  }),
);
add(
  "date_range format and math",
  aggs({
    r: {
      date_range: {
        field: "timestamp",
        format: "yyyy-MM-dd",
        ranges: [{ from: "2026-10-25||-1d/d", to: "2026-10-25||+1d/d" }],
      },
    },
  }),
);
add(
  "date_range time_zone",
  aggs({
    r: {
      date_range: {
        field: "timestamp",
        time_zone: "Europe/Oslo",
        ranges: [{ from: "2026-10-25T00:00:00", to: "2026-10-26T00:00:00" }],
      },
    },
  }),
);
add(
  "date_range keyed",
  aggs({
    r: {
      date_range: {
        field: "timestamp",
        keyed: true,
        ranges: [{ key: "first", to: "2026-10-23" }, { from: "2026-10-23" }],
      },
    },
  }),
);
add(
  "filter agg",
  aggs({ f: { filter: { term: { "state.level": "crit" } }, aggs: { a: { avg: { field: "state.temp" } } } } }),
);
add("filter agg with bool", aggs({ f: { filter: { bool: { must_not: { exists: { field: "state.loc" } } } } } }));
add(
  "filters named",
  aggs({
    f: {
      filters: {
        filters: { hot: { range: { "state.temp": { gte: 30 } } }, cold: { range: { "state.temp": { lt: 0 } } } },
      },
    },
  }),
);
add(
  "filters anonymous",
  aggs({ f: { filters: { filters: [{ term: { thingType: "10" } }, { term: { thingType: "20" } }] } } }),
);
add(
  "filters other_bucket",
  aggs({ f: { filters: { other_bucket: true, filters: { ok: { term: { "state.level": "ok" } } } } } }),
);
add(
  "filters other_bucket_key with sub",
  aggs({
    f: {
      filters: { other_bucket_key: "rest", filters: { ok: { term: { "state.level": "ok" } } } },
      aggs: { c: { value_count: { field: "state.count" } } },
    },
  }),
);
add(
  "filters anonymous other_bucket",
  aggs({ f: { filters: { other_bucket: true, filters: [{ exists: { field: "state.temp" } }] } } }),
);

// ---------------------------------------------------------------- combinations
add("aggs with hits and sort", {
  query: filtered({ term: { "state.level": "warn" } }),
  size: 5,
  sort: BY_TIME,
  aggs: { t: { terms: { field: "thingType" } } },
});
add("aggregations key", {
  query: filtered({ term: { thingType: "30" } }),
  size: 0,
  aggregations: { m: { max: { field: "state.count" } } },
});
add(
  "three levels nested",
  aggs({
    a: {
      terms: { field: "thingType" },
      aggs: {
        b: {
          date_histogram: { field: "timestamp", interval: "week" },
          aggs: {
            c: {
              range: { field: "state.count", ranges: [{ to: 500 }, { from: 500 }] },
              aggs: { d: { extended_stats: { field: "state.temp" } } },
            },
          },
        },
      },
    },
  }),
);
add(
  "filter inside histogram",
  aggs({
    h: {
      histogram: { field: "state.count", interval: 250 },
      aggs: { f: { filter: { term: { "state.on": true } }, aggs: { g: { geo_bounds: { field: "state.loc" } } } } },
    },
  }),
);
add(
  "terms of nested under filters",
  aggs({
    f: {
      filters: { filters: { pumps: { term: { "state.parts.type": "pump" } } } },
      aggs: { s: { terms: { field: "state.parts.state" } } },
    },
  }),
);
add("query on reading and hits with _source", {
  query: filtered({ range: { "state.reading.value": { gte: 45 } } }, { term: { "state.reading.unit": "C" } }),
  size: 8,
  sort: [{ "state.reading.value": "desc" }, ...BY_TIME],
  _source: ["state.reading", "thingName"],
});
add("two thing types only", {
  query: { bool: { filter: [TS, { terms: { thingType: ["10", "30"] } }], must_not: { term: { "state.on": true } } } },
  size: 10,
  sort: [{ "state.count": "asc" }, ...BY_TIME],
});

export const CORPUS: readonly Case[] = CASES;

// ---------------------------------------------------------------- refusals
const REFUSED: Refusal[] = [];
const refuse = (name: string, names: string, request: Json, openSearchStatus?: number): void => {
  REFUSED.push({ name, names, request, openSearchStatus });
};
refuse("an unknown query", "not_a_query", { query: filtered({ not_a_query: {} }) });
refuse("an unknown aggregation", "not_an_agg", aggs({ a: { not_an_agg: { field: "state.count" } } }));
refuse(
  "two aggregation types in one",
  "aggs.a",
  aggs({ a: { avg: { field: "state.count" }, max: { field: "state.count" } } }),
);
// OpenSearch answers this request error with 500 (aggregation_initialization_exception).
refuse(
  "a sub-aggregation under a metric",
  "aggs.a",
  aggs({ a: { avg: { field: "state.count" }, aggs: { b: { max: { field: "state.count" } } } } }),
  500,
);
refuse("an unparsable date", "range.timestamp", {
  query: filtered({ range: { timestamp: { gte: "yesterday-ish" } } }),
});
refuse(
  "an unknown time zone",
  "time_zone",
  aggs({ h: { date_histogram: { field: "timestamp", interval: "day", time_zone: "Mars/Olympus" } } }),
);
refuse(
  "an unknown date_histogram interval",
  "interval",
  aggs({ h: { date_histogram: { field: "timestamp", interval: "fortnight" } } }),
);
refuse("from + size over the result window", "from", { query: filtered({ match_all: {} }), from: 9_995, size: 10 });
refuse("negative size", "size", { query: filtered({ match_all: {} }), size: -1 });
refuse("an unknown request key", "bogus", { query: filtered({ match_all: {} }), bogus: 1 });
refuse("a bad sort order", "order", { query: filtered({ match_all: {} }), sort: [{ timestamp: "up" }] });
refuse(
  "terms include regexp with an exclude array",
  "include",
  aggs({ t: { terms: { field: "thingName", include: "thing-1.*", exclude: ["thing-10"] } } }),
);
refuse(
  "terms include array with an exclude regexp",
  "include",
  aggs({ t: { terms: { field: "thingName", include: ["thing-10"], exclude: "thing-1.*" } } }),
);
refuse("a term with two fields", "term", { query: filtered({ term: { thingName: "a", thingType: "b" } }) });
refuse("histogram without interval", "interval", aggs({ h: { histogram: { field: "state.count" } } }));
refuse("histogram with interval 0", "interval", aggs({ h: { histogram: { field: "state.count", interval: 0 } } }));
refuse("range agg without ranges", "ranges", aggs({ r: { range: { field: "state.count" } } }));
refuse("a bool with an unknown key", "bool", { query: { bool: { filter: TS, musts: [] } } });
refuse("a range with an unknown key", "range", {
  query: filtered({ range: { "state.count": { gte: 1, around: 2 } } }),
});
refuse("a script in an aggregation", "script", aggs({ a: { avg: { script: "doc['x'].value" } } }));
refuse("geo_distance without distance", "distance", {
  query: filtered({ geo_distance: { "state.loc": { lat: 1, lon: 1 } } }),
});
refuse("geo_polygon with two points", "points", {
  query: filtered({ geo_polygon: { "state.loc": { points: ["1,1", "2,2"] } } }),
});
refuse(
  "a date_histogram with a bad format",
  "format",
  aggs({ h: { date_histogram: { field: "timestamp", interval: "day", format: "yyyy-MM-dd'T" } } }),
);
refuse(
  "extended_stats with negative sigma",
  "sigma",
  aggs({ e: { extended_stats: { field: "state.count", sigma: -1 } } }),
);
refuse("top_hits with a bad size", "size", aggs({ h: { top_hits: { size: -2 } } }));
refuse("a bad minimum_should_match", "minimum_should_match", {
  query: { bool: { filter: TS, should: [{ term: { thingType: "10" } }], minimum_should_match: "most" } },
});
refuse("a sort with a bad missing", "missing", {
  query: filtered({ match_all: {} }),
  sort: [{ "state.count": { missing: "_middle" } }],
});
// OpenSearch answers this request error with 500 (aggregation_execution_exception).
refuse(
  "terms order by an unknown aggregation",
  "order",
  aggs({ t: { terms: { field: "thingName", order: { nope: "asc" } } } }),
  500,
);
refuse(
  "a bad offset",
  "offset",
  aggs({ h: { date_histogram: { field: "timestamp", interval: "day", offset: "soon" } } }),
);

export const REFUSALS: readonly Refusal[] = REFUSED;
