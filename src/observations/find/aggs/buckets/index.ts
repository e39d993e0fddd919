/**
 * Bucket aggregations (terms, histograms, ranges, filters): they divide the
 * documents into buckets and run their sub-aggregations in each.
 */
import type { Builder } from "../types.js";
import { dateHistogram } from "./date-histogram.js";
import { dateRange } from "./date-range.js";
import { filter } from "./filter.js";
import { filters } from "./filters.js";
import { histogram } from "./histogram.js";
import { range } from "./range.js";
import { terms } from "./terms.js";

export const BUCKET_BUILDERS: Record<string, Builder> = {
  terms,
  histogram,
  date_histogram: dateHistogram,
  range,
  date_range: dateRange,
  filter,
  filters,
};
