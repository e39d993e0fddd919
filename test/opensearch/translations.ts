/**
 * Requests of what Elasticsearch 5.6 took and OpenSearch 2.x no longer does, beyond the
 * differential corpus: each one is translated by src/opensearch/translate.ts, and FIND must
 * answer it on OpenSearch as the embedded evaluator does.
 */
import type { Case } from "../observations/differential/queries.js";
import { START } from "../observations/differential/data.js";

const TS = { range: { timestamp: { gte: START } } };
const BY_TIME = [{ timestamp: "asc" }];

export const EXTRA_CASES: Case[] = [
  {
    name: "bool with disable_coord (removed in 6.0)",
    request: {
      query: { bool: { filter: [TS, { term: { "state.level": "warn" } }], disable_coord: true } },
      size: 10,
      sort: BY_TIME,
    },
  },
  {
    name: "geo_distance with distance_type sloppy_arc and optimize_bbox (removed in 6.0 and 7.0)",
    request: {
      query: {
        bool: {
          filter: [
            TS,
            {
              geo_distance: {
                distance: "30km",
                distance_type: "sloppy_arc",
                optimize_bbox: "memory",
                "state.loc": { lat: 60, lon: 11 },
              },
            },
          ],
        },
      },
      size: 10,
      sort: BY_TIME,
    },
  },
  {
    name: "geo_bounding_box with type and coerce (removed in 7.0)",
    request: {
      query: {
        bool: {
          filter: [
            TS,
            {
              geo_bounding_box: {
                type: "indexed",
                coerce: true,
                "state.loc": { top_left: { lat: 60.2, lon: 10.1 }, bottom_right: { lat: 59.8, lon: 10.6 } },
              },
            },
          ],
        },
      },
      size: 10,
      sort: BY_TIME,
    },
  },
  {
    name: "geo_polygon with ignore_malformed (removed in 7.0)",
    request: {
      query: {
        bool: {
          filter: [
            TS,
            {
              geo_polygon: {
                ignore_malformed: true,
                "state.loc": { points: ["59,10", "60,12", "59,12"] },
              },
            },
          ],
        },
      },
      size: 10,
      sort: BY_TIME,
    },
  },
  {
    name: "timeout in the request (FIND answers whole within its own budget)",
    request: {
      query: { bool: { filter: [TS, { term: { thingName: "thing-07" } }] } },
      size: 5,
      sort: BY_TIME,
      timeout: "1ms",
    },
  },
  {
    name: "date_histogram with a java.time-incompatible Joda format in min/max",
    request: {
      size: 0,
      query: { bool: { filter: [TS] } },
      aggs: {
        a: { min: { field: "timestamp", format: "yyyy-MM-dd'T'HH:mmZZ" } },
        b: { max: { field: "timestamp", format: "YYYY/MM/dd" } },
      },
    },
  },
  {
    name: "date_range with a Joda format",
    request: {
      size: 0,
      query: { bool: { filter: [TS] } },
      aggs: {
        r: {
          date_range: {
            field: "timestamp",
            format: "dd.MM.yyyy",
            ranges: [{ to: "25.10.2026" }, { from: "25.10.2026" }],
          },
        },
      },
    },
  },
  {
    name: "range on timestamp in a filter aggregation, with a time zone and date math",
    request: {
      size: 0,
      query: { bool: { filter: [TS] } },
      aggs: {
        f: {
          filter: {
            range: { timestamp: { gte: "2026-10-25||/d", lt: "2026-10-25||+1d/d", time_zone: "Europe/Oslo" } },
          },
        },
      },
    },
  },
  {
    name: "long sort sentinel of a declared long field",
    request: {
      query: { bool: { filter: [TS, { term: { thingName: "thing-03" } }] } },
      size: 400,
      sort: [{ "state.count": { order: "desc", missing: "_first" } }, ...BY_TIME],
    },
  },
];
