import { dateRangeBounds } from "../observations/index.js";

/**
 * An Elasticsearch 5.6 search request (as FIND takes it, already planned and so valid) as
 * OpenSearch 2.x reads it to the same effect. Each rewrite follows an Elasticsearch
 * breaking-changes note:
 * - `interval` of `date_histogram` → `calendar_interval` (a unit of one) or `fixed_interval` (7.2);
 * - custom date formats from Joda to java.time: `yyyy`/`YYYY` → `uuuu`, `ZZ` → `ZZZZZ` (7.0);
 * - `_term` → `_key` in a `terms` order (6.0 deprecated, 7.0 removed);
 * - `type` of an `ids` query, mapping types being gone (7.0, OpenSearch 2.0);
 * - `disable_coord` of `bool` (6.0 removed the coordination factor);
 * - geo queries' `coerce`/`ignore_malformed` → `validation_method`, `optimize_bbox` and the
 *   `geo_bounding_box` `type` dropped, `distance_type: sloppy_arc` → `arc` (6.0 and 7.0);
 * - a `range` on `timestamp` is resolved here to epoch milliseconds as the embedded evaluator
 *   resolves it (ES 5.6's Joda rounds a formatted bound missing smaller fields up for `gt`/`lte`,
 *   which java.time does not always do, and `now` is the request's own);
 * - `timeout` is left out: FIND accepts it and answers whole, within its own budget.
 */
export function toOpenSearch(request: Json, now: number): Json {
  const out: Json = {};
  for (const [k, v] of Object.entries(request)) {
    if (k === "timeout") continue;
    out[k] = walk(v, now, k);
  }
  return out;
}

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => v !== null && typeof v === "object" && !Array.isArray(v);

/** Units ES 5.6 reads as calendar units (one of them); any other interval is fixed. */
export const CALENDAR_INTERVALS: ReadonlySet<string> = new Set([
  "year",
  "1y",
  "quarter",
  "1q",
  "month",
  "1M",
  "week",
  "1w",
  "day",
  "1d",
  "hour",
  "1h",
  "minute",
  "1m",
  "second",
  "1s",
]);

/** The named formats of ES: words that are no pattern, even those made only of pattern letters. */
const NAMED_FORMATS = new Set([
  "epoch_millis",
  "epoch_second",
  "strict_date_optional_time",
  "date_optional_time",
  "date",
  "strict_date",
  "basic_date",
  "date_time",
  "strict_date_time",
  "date_time_no_millis",
  "strict_date_time_no_millis",
  "basic_date_time",
  "date_hour",
  "date_hour_minute",
  "date_hour_minute_second",
  "strict_date_hour_minute_second",
  "date_hour_minute_second_millis",
  "year",
  "year_month",
  "year_month_day",
  "hour_minute",
  "hour_minute_second",
]);

const GEO_QUERIES = new Set(["geo_distance", "geo_bounding_box", "geo_polygon"]);

function walk(v: unknown, now: number, key: string): unknown {
  if (Array.isArray(v)) return v.map((e) => walk(e, now, key));
  if (!isObject(v)) return v;
  if (key === "range" && isObject(v.timestamp)) return timestampRange(v, v.timestamp, now);
  const out: Json = {};
  for (const [k, e] of Object.entries(v)) out[k] = walk(e, now, k);
  if (typeof out.format === "string") out.format = javaTimeFormat(out.format);
  if (key === "date_histogram" && out.interval !== undefined) {
    const interval = typeof out.interval === "number" ? `${out.interval}ms` : String(out.interval);
    delete out.interval;
    if (CALENDAR_INTERVALS.has(interval)) out.calendar_interval = interval;
    else out.fixed_interval = interval;
  }
  if (key === "terms" && typeof out.field === "string" && out.order !== undefined) {
    out.order = Array.isArray(out.order) ? out.order.map(termToKey) : termToKey(out.order);
  }
  if (key === "ids") delete out.type;
  if (key === "bool") delete out.disable_coord;
  if (GEO_QUERIES.has(key)) geoOptions(out, key);
  return out;
}

function termToKey(order: unknown): unknown {
  if (!isObject(order) || !("_term" in order)) return order;
  const { _term, ...rest } = order;
  return { _key: _term, ...rest };
}

/** A Joda pattern as java.time reads it; named formats stay, each `||` alternative on its own. */
function javaTimeFormat(spec: string): string {
  return spec
    .split("||")
    .map((part) => (NAMED_FORMATS.has(part) ? part : jodaToJava(part)))
    .join("||");
}

/** Outside quoted literals: year letters to `u` (year, not java's year-of-era or week year), `ZZ` to `ZZZZZ` (+01:00). */
function jodaToJava(pattern: string): string {
  let out = "";
  for (let i = 0; i < pattern.length;) {
    const c = pattern[i]!;
    if (c === "'") {
      const end = pattern.indexOf("'", i + 1);
      const stop = end < 0 ? pattern.length : end + 1;
      out += pattern.slice(i, stop);
      i = stop;
      continue;
    }
    let j = i;
    while (pattern[j] === c) j++;
    const run = j - i;
    if (c === "y" || c === "Y") out += "u".repeat(run);
    else if (c === "Z" && run === 2) out += "ZZZZZ";
    else out += pattern.slice(i, j);
    i = j;
  }
  return out;
}

/** A range on `timestamp` with its bounds as the epoch milliseconds the embedded evaluator reads them as. */
function timestampRange(range: Json, spec: Json, now: number): Json {
  const { min, max } = dateRangeBounds("timestamp", spec, now);
  const out: Json = { format: "epoch_millis" };
  if (Number.isFinite(min)) out.gte = min;
  if (Number.isFinite(max)) out.lte = max;
  if (spec.boost !== undefined) out.boost = spec.boost;
  if (spec._name !== undefined) out._name = spec._name;
  // Neither bound: as given (a range without bounds matches the documents that have the field).
  const rest = Object.fromEntries(Object.entries(range).filter(([k]) => k !== "timestamp"));
  return { ...rest, timestamp: Number.isFinite(min) || Number.isFinite(max) ? out : spec };
}

function geoOptions(q: Json, kind: string): void {
  if (q.validation_method === undefined) {
    if (q.coerce === true) q.validation_method = "COERCE";
    else if (q.ignore_malformed === true) q.validation_method = "IGNORE_MALFORMED";
  }
  delete q.coerce;
  delete q.ignore_malformed;
  delete q.optimize_bbox;
  if (q.distance_type === "sloppy_arc") q.distance_type = "arc";
  if (kind === "geo_bounding_box") delete q.type;
}
