/**
 * Metric aggregations (avg ... geo_centroid): one value, or a few, computed
 * from the documents of their bucket; they hold no sub-aggregations.
 */
import type { Builder } from "../types.js";
import { cardinality } from "./cardinality.js";
import { extendedStats } from "./extended-stats.js";
import { geoBounds } from "./geo-bounds.js";
import { geoCentroid } from "./geo-centroid.js";
import { percentiles } from "./percentiles.js";
import { avg, max, min, sum } from "./single-value.js";
import { stats } from "./stats.js";
import { topHits } from "./top-hits.js";
import { valueCount } from "./value-count.js";

export const METRIC_BUILDERS: Record<string, Builder> = {
  avg,
  min,
  max,
  sum,
  stats,
  extended_stats: extendedStats,
  value_count: valueCount,
  cardinality,
  percentiles,
  top_hits: topHits,
  geo_bounds: geoBounds,
  geo_centroid: geoCentroid,
};
