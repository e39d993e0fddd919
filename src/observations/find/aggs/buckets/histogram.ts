import { UTC } from "../../dates.js";
import { badQuery, numberAt, objectAt, onlyKeys } from "../../errors.js";
import type { Builder } from "../types.js";
import { valueSource } from "../values.js";
import { histogramRun, type HistogramSpec } from "./histogram-buckets.js";

export const histogram: Builder = (body, b) => {
  onlyKeys(
    body,
    ["field", "interval", "offset", "min_doc_count", "extended_bounds", "order", "keyed", "missing"],
    b.where,
  );
  const src = valueSource({ field: body.field, missing: body.missing }, b.where, []);
  const interval = numberAt(body.interval, `${b.where}.interval`);
  if (interval <= 0) throw badQuery(`[${b.where}.interval] must be > 0`);
  const offset = body.offset === undefined ? 0 : numberAt(body.offset, `${b.where}.offset`);
  const eb =
    body.extended_bounds === undefined ? undefined : objectAt(body.extended_bounds, `${b.where}.extended_bounds`);
  const bounds = eb && {
    min: eb.min === undefined ? undefined : numberAt(eb.min, "extended_bounds.min"),
    max: eb.max === undefined ? undefined : numberAt(eb.max, "extended_bounds.max"),
  };
  const spec: HistogramSpec = {
    keyOf: (v) => Math.floor((v - offset) / interval) * interval + offset,
    next: (k) => k + interval,
    format: undefined,
    zone: UTC,
  };
  return histogramRun(body, b, spec, (d) => src.values(d), bounds, src);
};
