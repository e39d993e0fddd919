import { answeredIndex, parseIndex, type IndexLayout } from "./indices.js";
import { ID_FIELD } from "./mapping.js";

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => v !== null && typeof v === "object" && !Array.isArray(v);

/**
 * OpenSearch 2.x's answer to a search in the shape the embedded evaluator answers FIND (ES 5.6's),
 * each change following an Elasticsearch breaking-changes note:
 * - hits name their thing type's index (`observations-<thingType>`, whatever period holds them)
 *   and `_type: "observation"` (types removed in 7.0 and OpenSearch 2.0);
 * - `hits.total` is a number in `top_hits` too (7.0 made it an object; the request asks for
 *   numbers, which does not reach inside aggregations);
 * - `max_score` is 0.0 when no hit is asked for (7.0 stopped scoring then);
 * - a `stats` of no values has a null sum (later versions write 0);
 * - the fields later versions added are left out: `extended_stats`' population and sampling
 *   variants (7.9), `geo_centroid.count`;
 * - `_shards` counts one shard per thing type searched, as the embedded evaluator does;
 * - an aggregation answers `meta` only when the request gave it one (OpenSearch answers an empty
 *   one for an aggregation a shard rewrote to match nothing);
 * - a sort value of Long.MIN_VALUE/MAX_VALUE (the sentinel of a long field a hit lacks) is
 *   written whole, as a bigint (`findJson`).
 */
export function fromOpenSearch(
  body: Json,
  layout: IndexLayout,
  answer: { size: number; shards: number; aggs: unknown },
): Json {
  const out = fix(body, layout, undefined) as Json;
  if (isObject(out.aggregations) && isObject(answer.aggs)) withoutAddedMeta(out.aggregations, answer.aggs);
  const hits = out.hits;
  if (answer.size === 0 && isObject(hits) && hits.max_score === null) hits.max_score = 0;
  out._shards = { total: answer.shards, successful: answer.shards, skipped: 0, failed: 0 };
  return out;
}

/** Fields later versions added to an aggregation's answer, absent from 5.6. */
export const EXTENDED_STATS_ADDED: readonly string[] = [
  "variance_population",
  "variance_sampling",
  "std_deviation_population",
  "std_deviation_sampling",
  "variance_population_as_string",
  "variance_sampling_as_string",
  "std_deviation_population_as_string",
  "std_deviation_sampling_as_string",
];
export const BOUNDS_ADDED: readonly string[] = [
  "upper_population",
  "lower_population",
  "upper_sampling",
  "lower_sampling",
];

/** 2^63 as a double: what Long.MAX_VALUE reads back as from JSON (and its negative, Long.MIN_VALUE exactly). */
const LONG_EDGE = 2 ** 63;

function fix(v: unknown, layout: IndexLayout, key: string | undefined): unknown {
  if (Array.isArray(v)) {
    if (key === "hits") return v.map((h) => (isObject(h) ? hit(h, layout) : h));
    return v.map((e) => fix(e, layout, undefined));
  }
  if (!isObject(v)) return v;
  const out: Json = {};
  // An aggregation's `meta` is the request's own, handed back as it was.
  for (const [k, e] of Object.entries(v)) out[k] = k === "meta" ? e : fix(e, layout, k);
  if (key === "hits" && isObject(out.total)) out.total = out.total.value;
  if (out.count === 0 && out.sum === 0 && "avg" in out) out.sum = null;
  if ("std_deviation_bounds" in out) for (const f of EXTENDED_STATS_ADDED) delete out[f];
  if (key === "std_deviation_bounds" || key === "std_deviation_bounds_as_string")
    for (const f of BOUNDS_ADDED) delete out[f];
  if (isObject(out.location) && typeof out.count === "number" && Object.keys(out).length === 2) delete out.count;
  return out;
}

/** One hit, its members in 5.6's order: `_index`, `_type`, `_id`, `_score`, `_source`, `sort`. */
function hit(h: Json, layout: IndexLayout): Json {
  const out: Json = {};
  const index = typeof h._index === "string" ? h._index : "";
  const thingType = parseIndex(layout, index)?.thingType;
  out._index = thingType === undefined ? index : answeredIndex(thingType);
  out._type = "observation";
  for (const [k, e] of Object.entries(h)) {
    if (k === "_index" || k === "_type") continue;
    // `_source` is the document as stored (without the id it carries for exports): nothing in it is changed.
    if (k === "_source" && isObject(e) && ID_FIELD in e) {
      const { [ID_FIELD]: _id, ...document } = e;
      out[k] = document;
    } else out[k] = k === "sort" && Array.isArray(e) ? e.map(sortValue) : e;
  }
  return out;
}

function sortValue(v: unknown): unknown {
  if (v === LONG_EDGE) return 9223372036854775807n;
  if (v === -LONG_EDGE) return -9223372036854775808n;
  return v;
}

/** Drops the `meta` of each answered aggregation whose request has none, at every level. */
function withoutAddedMeta(answered: Json, requested: Json): void {
  for (const [name, def] of Object.entries(requested)) {
    const out = answered[name];
    if (!isObject(out) || !isObject(def)) continue;
    if (def.meta === undefined) delete out.meta;
    const subs = def.aggs ?? def.aggregations;
    if (!isObject(subs)) continue;
    const buckets = out.buckets;
    // A bucket aggregation's sub-aggregations are in each bucket; a single-bucket one's beside its doc_count.
    const holders = Array.isArray(buckets) ? buckets : isObject(buckets) ? Object.values(buckets) : [out];
    for (const b of holders) if (isObject(b)) withoutAddedMeta(b, subs);
  }
}
