import {
  DEFAULT_DATE_FORMAT,
  UTC,
  nextFixed,
  nextUnit,
  parseDateMath,
  parseFormat,
  parseTimeValue,
  parseZone,
  roundDown,
  roundFixed,
  type DateFormat,
  type Unit,
  type Zone,
} from "./dates.js";
import { badQuery, intAt, isObject, numberAt, objectAt, onlyKeys, stringAt, type Json, own } from "./errors.js";
import {
  accessor,
  geoAccessor,
  isDateField,
  javaDouble,
  quantize,
  toNumber,
  type Doc,
  type GeoPoint,
} from "./fields.js";
import { compileSort, compileSource, hitOf, sortValuesOf } from "./hits.js";
import { compileQuery, newPushdown, type Matcher } from "./query.js";
import { regexpPattern } from "../../patterns/index.js";
import { FIND_LIMITS, overLimit, type QueryBudget } from "./limits.js";

export interface AggContext {
  now: number;
  /** The request's counters: aggregations compiled, buckets answered, time left. */
  budget: QueryBudget;
  /** Levels of aggregations enclosing these. */
  depth?: number;
  /**
   * What the aggregations see of the search, known only when it runs. Held by
   * reference: each nesting level copies the context, and a fact written into a
   * copy's own field would not reach the levels compiled from another copy.
   */
  search: SearchFacts;
}

export interface SearchFacts {
  /** Shards searched (one per thing type), set before each run: ES sizes its per-shard terms by it. */
  shards: number;
}

/** A compiled aggregation: run over the documents of its bucket, it answers the ES 5.6 shape. */
export interface Agg {
  name: string;
  run(docs: Doc[]): Json;
}

type Output = Json;

/** Compiles the `aggs`/`aggregations` object of a request or of a bucket aggregation. */
export function compileAggs(spec: unknown, ctx: AggContext, where = "aggs"): Agg[] {
  if (spec === undefined) return [];
  const o = objectAt(spec, where);
  const depth = (ctx.depth ?? 0) + 1;
  if (depth > FIND_LIMITS.aggregationDepth)
    throw overLimit(`[${where}] aggregations nest too deep`, FIND_LIMITS.aggregationDepth);
  const inner = { ...ctx, depth };
  return Object.entries(o).map(([name, def]) => compileAgg(name, objectAt(def, `${where}.${name}`), inner));
}

function compileAgg(name: string, def: Json, ctx: AggContext): Agg {
  const subSpec = def.aggs ?? def.aggregations;
  const kinds = Object.keys(def).filter((k) => k !== "aggs" && k !== "aggregations" && k !== "meta");
  if (kinds.length !== 1) throw badQuery(`[aggs.${name}] must hold exactly one aggregation type`);
  const kind = kinds[0]!;
  const body = def[kind];
  ctx.budget.addAggregation();
  const where = `aggs.${name}.${kind}`;
  if (kind === "global") throw badQuery(`[${where}] global aggregations are not allowed`);
  const subs = compileAggs(subSpec, ctx, `aggs.${name}.aggs`);
  const make = own(BUILDERS, kind);
  if (!make) throw badQuery(`unsupported aggregation [${kind}] in [aggs.${name}]`);
  if (METRICS.has(kind) && subs.length > 0) throw badQuery(`[${where}] cannot hold sub-aggregations`);
  const answer = make(objectAt(body, where), { ctx, subs, where });
  const meta = def.meta;
  const budget = ctx.budget;
  // Buckets are counted as each aggregation answers, so an explosion at depth stops early.
  const run = (docs: Doc[]): Output => {
    budget.tick();
    const out = answer(docs);
    const buckets = out.buckets;
    if (buckets) budget.addBuckets(Array.isArray(buckets) ? buckets.length : Object.keys(buckets).length);
    return out;
  };
  return {
    name,
    run: meta === undefined ? run : (docs) => ({ meta, ...run(docs) }),
  };
}

interface BuildContext {
  ctx: AggContext;
  subs: Agg[];
  where: string;
}

type Builder = (body: Json, b: BuildContext) => (docs: Doc[]) => Output;

const METRICS = new Set([
  "avg",
  "min",
  "max",
  "sum",
  "stats",
  "extended_stats",
  "value_count",
  "cardinality",
  "percentiles",
  "top_hits",
  "geo_bounds",
  "geo_centroid",
]);

function runSubs(subs: Agg[], docs: Doc[], out: Output): Output {
  for (const s of subs) out[s.name] = s.run(docs);
  return out;
}

// ---------------------------------------------------------------- metrics

interface ValueSource {
  field: string;
  /** Set once a boolean value is read: the field is then mapped boolean. */
  booleans: boolean;
  date: boolean;
  format: DateFormat | undefined;
  values(doc: Doc): number[];
}

function valueSource(body: Json, where: string, extra: string[]): ValueSource {
  onlyKeys(body, ["field", "missing", "format", ...extra], where);
  if (body.script !== undefined) throw badQuery(`[${where}] scripts are not supported`);
  const field = stringAt(body.field, `${where}.field`);
  const date = isDateField(field);
  const format =
    body.format === undefined
      ? date
        ? DEFAULT_DATE_FORMAT
        : undefined
      : parseFormat(stringAt(body.format, `${where}.format`));
  const get = accessor(field);
  const missing = body.missing === undefined ? undefined : toNumber(body.missing);
  const src: ValueSource = {
    field,
    booleans: false,
    date,
    format: date ? format : undefined,
    values: (doc) => {
      const vs = get(doc);
      const out: number[] = [];
      for (const v of vs) {
        if (typeof v === "boolean") src.booleans = true;
        const n = toNumber(v);
        if (n !== undefined) out.push(n);
      }
      if (out.length === 0 && missing !== undefined) out.push(missing);
      return out;
    },
  };
  return src;
}

/**
 * A metric and, for a date or boolean field, its `_as_string` in the field's format. A
 * boolean field's DocValueFormat writes `value != 0`: a string under single-value metrics
 * (which print format(value).toString()), the boolean itself under stats.
 */
function withString(out: Output, key: string, value: number | null, src: ValueSource, stats = false): Output {
  out[key] = value;
  if (value !== null && !src.format && src.booleans) {
    out[`${key}_as_string`] = stats ? value !== 0 : String(value !== 0);
    return out;
  }
  if (value !== null && src.format) out[`${key}_as_string`] = src.format.print(value, UTC);
  return out;
}

function singleValue(reduce: (vals: number[]) => number | null): Builder {
  return (body, b) => {
    const src = valueSource(body, b.where, []);
    return (docs) => withString({}, "value", reduce(collect(src, docs)), src);
  };
}

/** Values of a field, shard by shard (thing type by thing type), with where each shard's end. */
type Collected = number[] & { shardEnds?: number[] };

/**
 * A sum as ES adds one: Kahan-compensated per shard, then the shards' sums compensated in
 * shard order. The same order of additions gives the same last digits (which show in the
 * `_as_string` of a sum of dates).
 */
function sum(vals: Collected): number {
  const ends = vals.shardEnds;
  if (!ends || ends.length <= 1) return kahanSum(vals);
  const sums: number[] = [];
  let from = 0;
  for (const end of ends) {
    sums.push(kahanSum(vals.slice(from, end)));
    from = end;
  }
  return kahanSum(sums);
}

function statsOf(vals: Collected): { count: number; min: number; max: number; sum: number } {
  let min = Infinity;
  let max = -Infinity;
  for (const v of vals) {
    if (v < min) min = v;
    if (v > max) max = v;
  }
  return { count: vals.length, min, max, sum: sum(vals) };
}

const collect = (src: ValueSource, docs: Doc[]): Collected => {
  const shards = new Map<string, Doc[]>();
  for (const d of docs) {
    const shard = shards.get(d.thingType);
    if (shard) shard.push(d);
    else shards.set(d.thingType, [d]);
  }
  const vals: Collected = [];
  const ends: number[] = [];
  for (const key of [...shards.keys()].sort()) {
    for (const d of shards.get(key)!) for (const v of src.values(d)) vals.push(v);
    ends.push(vals.length);
  }
  vals.shardEnds = ends;
  return vals;
};

const stats: Builder = (body, b) => {
  const src = valueSource(body, b.where, []);
  return (docs) => statsOutput(collect(src, docs), src);
};

function statsOutput(vals: number[], src: ValueSource): Output {
  const s = statsOf(vals);
  const has = s.count > 0;
  const out: Output = { count: s.count };
  withString(out, "min", has ? s.min : null, src, true);
  withString(out, "max", has ? s.max : null, src, true);
  withString(out, "avg", has ? s.sum / s.count : null, src, true);
  withString(out, "sum", has ? s.sum : null, src, true);
  return out;
}

const extendedStats: Builder = (body, b) => {
  const src = valueSource(body, b.where, ["sigma"]);
  const sigma = body.sigma === undefined ? 2 : numberAt(body.sigma, `${b.where}.sigma`);
  if (sigma < 0) throw badQuery(`[${b.where}.sigma] must be >= 0`);
  return (docs) => {
    const vals = collect(src, docs);
    const out = statsOutput(vals, src);
    if (vals.length === 0) {
      return {
        ...out,
        sum_of_squares: null,
        variance: null,
        std_deviation: null,
        std_deviation_bounds: { upper: null, lower: null },
      };
    }
    // Compensated sums and ES's formula, so the last digits agree with it.
    const squares: Collected = vals.map((v) => v * v);
    squares.shardEnds = vals.shardEnds;
    const sq = sum(squares);
    const total = sum(vals);
    const avg = total / vals.length;
    const variance = Math.max(0, (sq - (total * total) / vals.length) / vals.length);
    const sd = Math.sqrt(variance);
    const result: Output = {
      ...out,
      sum_of_squares: sq,
      variance,
      std_deviation: sd,
      std_deviation_bounds: { upper: avg + sigma * sd, lower: avg - sigma * sd },
    };
    // InternalExtendedStats writes these in the field's format too (dates, booleans).
    const printed = (v: number): unknown =>
      src.format ? src.format.print(v, UTC) : src.booleans ? v !== 0 : undefined;
    if (printed(0) !== undefined) {
      result.sum_of_squares_as_string = printed(sq);
      result.variance_as_string = printed(variance);
      result.std_deviation_as_string = src.booleans ? String(sd !== 0) : printed(sd);
      const str = (v: number): unknown => (src.booleans ? String(v !== 0) : printed(v));
      result.std_deviation_bounds_as_string = { upper: str(avg + sigma * sd), lower: str(avg - sigma * sd) };
    }
    return result;
  };
};

/** A sum with Kahan compensation, as ES's metric aggregations add. */
function kahanSum(vals: readonly number[]): number {
  let sum = 0;
  let c = 0;
  for (const v of vals) {
    if (!Number.isFinite(v)) {
      sum += v;
      continue;
    }
    const y = v - c;
    const t = sum + y;
    c = t - sum - y;
    sum = t;
  }
  return sum;
}

/**
 * The values doc values hold: numbers and booleans are sorted numeric doc values, which
 * keep a repeated value; keywords are sorted set doc values, which hold each distinct
 * value of a document once.
 */
const valueCount: Builder = (body, b) => {
  onlyKeys(body, ["field", "missing"], b.where);
  const get = accessor(stringAt(body.field, `${b.where}.field`));
  return (docs) => {
    let n = 0;
    for (const d of docs) {
      const vs = get(d);
      let keywords: Set<unknown> | undefined;
      for (const v of vs) {
        if (typeof v === "string") (keywords ??= new Set()).add(v);
        else n++;
      }
      if (keywords) n += keywords.size;
    }
    return { value: n };
  };
};

/** Exact below ES's default precision_threshold (3000), which is where dashboards live. */
const cardinality: Builder = (body, b) => {
  onlyKeys(body, ["field", "missing", "precision_threshold"], b.where);
  const get = accessor(stringAt(body.field, `${b.where}.field`));
  const missing = body.missing;
  return (docs) => {
    const seen = new Set<unknown>();
    for (const d of docs) {
      const vs = get(d);
      if (vs.length === 0 && missing !== undefined) seen.add(missing);
      for (const v of vs) seen.add(typeof v === "object" ? JSON.stringify(v) : v);
    }
    return { value: seen.size };
  };
};

/**
 * ES 5.6's t-digest keeps every value as its own centroid while the set is
 * small, and then interpolates linearly between neighbours at q*(n-1): the
 * same as this exact computation. Large sets may differ in the last digits.
 */
const percentiles: Builder = (body, b) => {
  const src = valueSource(body, b.where, ["percents", "keyed", "tdigest", "compression"]);
  if (body.hdr !== undefined) throw badQuery(`[${b.where}.hdr] is not supported`);
  const percents =
    body.percents === undefined
      ? [1, 5, 25, 50, 75, 95, 99]
      : (body.percents as unknown[]).map((p) => numberAt(p, `${b.where}.percents`));
  if (!Array.isArray(body.percents ?? [])) throw badQuery(`[${b.where}.percents] must be an array`);
  const keyed = body.keyed !== false;
  return (docs) => {
    const vals = collect(src, docs).sort((x, y) => x - y);
    // t-digest 3.0's interpolation between the singleton centroids around q*(n-1), term for term.
    const at = (p: number): number | null => {
      if (vals.length === 0) return null;
      if (vals.length === 1) return vals[0]!;
      const idx = (p / 100) * (vals.length - 1);
      const hi = Math.min(vals.length - 1, Math.ceil(idx));
      if (hi === 0) return vals[0]!;
      const lo = hi - 1;
      return vals[lo]! * (hi - idx) + vals[hi]! * (idx - lo);
    };
    if (keyed) {
      const values: Output = {};
      for (const p of percents) {
        const v = at(p);
        values[javaDouble(p)] = v;
        if (v !== null && src.format) values[`${javaDouble(p)}_as_string`] = src.format.print(v, UTC);
      }
      return { values };
    }
    return { values: percents.map((p) => ({ key: p, value: at(p) })) };
  };
};

const topHits: Builder = (body, b) => {
  onlyKeys(body, ["size", "from", "sort", "_source", "track_scores"], b.where);
  const size = body.size === undefined ? 3 : intAt(body.size, `${b.where}.size`);
  const from = body.from === undefined ? 0 : intAt(body.from, `${b.where}.from`);
  if (from + size > FIND_LIMITS.innerResultWindow)
    throw overLimit(
      `[${b.where}] [from] + [size] is too large`,
      FIND_LIMITS.innerResultWindow,
      "index.max_inner_result_window",
    );
  const sorter = compileSort(body.sort);
  const source = compileSource(body._source);
  const trackScores = body.track_scores === true;
  return (docs) => {
    const sorted = [...docs].sort(sorter ? sorter.compare : (x, y) => y.score - x.score || x.id - y.id);
    const scored = !sorter || sorter.tracksScores || trackScores;
    const page = sorted.slice(from, from + size);
    const sortValues = sorter && !sorter.byScore ? sortValuesOf(sorter, page, docs) : undefined;
    const hits = page.map((d, i) => hitOf(d, scored ? d.score : null, source, sortValues?.[i]));
    let maxScore: number | null = null;
    if (scored) for (const d of docs) maxScore = maxScore === null ? d.score : Math.max(maxScore, d.score);
    return { hits: { total: docs.length, max_score: maxScore, hits } };
  };
};

function geoValues(body: Json, where: string, extra: string[]): (doc: Doc) => GeoPoint[] {
  onlyKeys(body, ["field", ...extra], where);
  const get = geoAccessor(stringAt(body.field, `${where}.field`));
  return (doc) => get(doc).map(quantize);
}

const geoBounds: Builder = (body, b) => {
  const get = geoValues(body, b.where, ["wrap_longitude"]);
  const wrap = body.wrap_longitude !== false;
  return (docs) => {
    let top = -Infinity;
    let bottom = Infinity;
    let posLeft = Infinity;
    let posRight = -Infinity;
    let negLeft = Infinity;
    let negRight = -Infinity;
    for (const d of docs) {
      for (const p of get(d)) {
        top = Math.max(top, p.lat);
        bottom = Math.min(bottom, p.lat);
        if (p.lon >= 0) {
          posLeft = Math.min(posLeft, p.lon);
          posRight = Math.max(posRight, p.lon);
        } else {
          negLeft = Math.min(negLeft, p.lon);
          negRight = Math.max(negRight, p.lon);
        }
      }
    }
    if (top === -Infinity) return {};
    let left: number;
    let right: number;
    // The choice ES 5.6's InternalGeoBounds makes: the narrower of the plain and the date-line-crossing box.
    if (negLeft === Infinity) [left, right] = [posLeft, posRight];
    else if (posLeft === Infinity) [left, right] = [negLeft, negRight];
    else if (wrap && posRight - negLeft > 180 - posLeft - (-180 - negRight)) [left, right] = [posLeft, negRight];
    else [left, right] = [negLeft, posRight];
    return { bounds: { top_left: { lat: top, lon: left }, bottom_right: { lat: bottom, lon: right } } };
  };
};

const geoCentroid: Builder = (body, b) => {
  const get = geoValues(body, b.where, []);
  return (docs) => {
    let lat = 0;
    let lon = 0;
    let n = 0;
    for (const d of docs) {
      for (const p of get(d)) {
        lat += p.lat;
        lon += p.lon;
        n++;
      }
    }
    return n === 0 ? {} : { location: { lat: lat / n, lon: lon / n } };
  };
};

// ---------------------------------------------------------------- buckets

interface Bucket {
  key: unknown;
  docs: Doc[];
  extra?: Output;
}

type Order = { path: string; desc: boolean }[];

function parseOrder(v: unknown, where: string, fallback: Order): Order {
  if (v === undefined) return fallback;
  const items = Array.isArray(v) ? v : [v];
  return items.map((item) => {
    const entries = Object.entries(objectAt(item, `${where}.order`));
    if (entries.length !== 1) throw badQuery(`[${where}.order] each entry must name one key`);
    const [path, dir] = entries[0]!;
    if (dir !== "asc" && dir !== "desc") throw badQuery(`[${where}.order.${path}] must be asc or desc`);
    return { path: path === "_term" ? "_key" : path, desc: dir === "desc" };
  });
}

/** A sub-aggregation value for ordering: `agg` (single value) or `agg.metric` / `agg[50]`. */
function orderValue(out: Output, path: string): number {
  const dot = path.indexOf(".");
  const name = dot < 0 ? path : path.slice(0, dot);
  const sub = out[name];
  if (!isObject(sub)) throw badQuery(`[order] names unknown aggregation [${name}]`);
  if (dot < 0) {
    if ("value" in sub) return (sub.value as number | null) ?? -Infinity;
    if ("doc_count" in sub) return sub.doc_count as number;
    throw badQuery(`[order] aggregation [${name}] is multi-valued: name the metric`);
  }
  const metric = path.slice(dot + 1);
  const v = sub[metric] ?? (isObject(sub.values) ? sub.values[metric] : undefined);
  if (v === undefined) throw badQuery(`[order] unknown metric [${path}]`);
  return (v as number | null) ?? -Infinity;
}

function compareKeys(a: unknown, b: unknown): number {
  if (typeof a === "number" && typeof b === "number") return a - b;
  const sa = String(a);
  const sb = String(b);
  return sa < sb ? -1 : sa > sb ? 1 : 0;
}

function sortBuckets(rendered: { bucket: Bucket; out: Output }[], order: Order, tieByKey: boolean): void {
  rendered.sort((x, y) => {
    for (const o of order) {
      let c: number;
      if (o.path === "_key") c = compareKeys(x.bucket.key, y.bucket.key);
      else if (o.path === "_count") c = x.bucket.docs.length - y.bucket.docs.length;
      else c = orderValue(x.out, o.path) - orderValue(y.out, o.path);
      if (c !== 0) return o.desc ? -c : c;
    }
    return tieByKey ? compareKeys(x.bucket.key, y.bucket.key) : 0;
  });
}

function renderBucket(b: Bucket, keyFields: Output, subs: Agg[]): Output {
  return runSubs(subs, b.docs, { ...keyFields, doc_count: b.docs.length, ...b.extra });
}

const terms: Builder = (body, b) => {
  onlyKeys(
    body,
    [
      "field",
      "size",
      "shard_size",
      "order",
      "min_doc_count",
      "shard_min_doc_count",
      "missing",
      "format",
      "show_term_doc_count_error",
      "execution_hint",
      "collect_mode",
      "include",
      "exclude",
      "value_type",
    ],
    b.where,
  );
  if (body.script !== undefined) throw badQuery(`[${b.where}] scripts are not supported`);
  const field = stringAt(body.field, `${b.where}.field`);
  const get = accessor(field);
  const size = body.size === undefined ? 10 : intAt(body.size, `${b.where}.size`, 1);
  const minDocCount = body.min_doc_count === undefined ? 1 : intAt(body.min_doc_count, `${b.where}.min_doc_count`);
  if (minDocCount === 0)
    throw badQuery(`[${b.where}.min_doc_count] 0 is not supported: terms of unmatched observations are not listed`);
  const order = parseOrder(body.order, b.where, [{ path: "_count", desc: true }]);
  // ES's IncludeExclude takes both as regular expressions or both as lists of terms, never a mix.
  if (
    body.include !== undefined &&
    body.exclude !== undefined &&
    (typeof body.include === "string") !== (typeof body.exclude === "string")
  )
    throw badQuery(`[${b.where}] [include] and [exclude] must both be regular expressions or both arrays of terms`);
  const include = body.include === undefined ? undefined : termFilter(body.include, `${b.where}.include`);
  const exclude = body.exclude === undefined ? undefined : termFilter(body.exclude, `${b.where}.exclude`);
  const missing = body.missing;
  const date = isDateField(field);
  const format = date
    ? body.format === undefined
      ? DEFAULT_DATE_FORMAT
      : parseFormat(String(body.format))
    : undefined;
  const showErrors = body.show_term_doc_count_error === true;
  const explicitShardSize =
    body.shard_size === undefined ? undefined : Math.max(size, intAt(body.shard_size, `${b.where}.shard_size`, 1));
  const first = order[0]!;
  const termOrder = first.path === "_key";
  const countDesc = first.path === "_count" && first.desc;
  return (docs) => {
    let booleans = false;
    const keyOf = (v: unknown): unknown => {
      if (typeof v === "boolean") booleans = true;
      return typeof v === "boolean" ? (v ? 1 : 0) : typeof v === "object" ? JSON.stringify(v) : v;
    };
    // Each thing type is an index of one shard: ES collects the top terms per shard and merges them.
    const shards = new Map<string, Map<unknown, Bucket>>();
    for (const d of docs) {
      let groups = shards.get(d.thingType);
      if (!groups) shards.set(d.thingType, (groups = new Map()));
      const vs = get(d);
      const keys = vs.length === 0 && missing !== undefined ? [missing] : vs.map(keyOf);
      for (const key of keys) {
        if (include && !include(key)) continue;
        if (exclude && exclude(key)) continue;
        let g = groups.get(key);
        if (!g) groups.set(key, (g = { key, docs: [] }));
        if (g.docs[g.docs.length - 1] !== d) g.docs.push(d);
      }
    }
    const keyFields = (key: unknown): Output => (booleans ? booleanKey(key) : keyFieldsOf(key, format));
    const shardSize = explicitShardSize ?? (b.ctx.search.shards > 1 ? Math.floor(size * 1.5 + 10) : size);
    let errorSum = 0;
    let other = 0;
    const merged = new Map<unknown, { key: unknown; docs: Doc[]; error: number }>();
    for (const groups of shards.values()) {
      const rendered = [...groups.values()].map((bucket) => ({
        bucket,
        out: order.some((o) => o.path !== "_key" && o.path !== "_count")
          ? renderBucket(bucket, keyFields(bucket.key), b.subs)
          : {},
      }));
      sortBuckets(rendered, order, true);
      const top = rendered.slice(0, shardSize);
      for (const r of rendered.slice(shardSize)) other += r.bucket.docs.length;
      // InternalTerms.doReduce of ES 5.6: a shard that returned a full page may have left out
      // a term as frequent as its last one; under any order but count or term it is unbounded.
      const error = top.length < shardSize || termOrder ? 0 : countDesc ? top[top.length - 1]!.bucket.docs.length : -1;
      errorSum = errorSum === -1 || error === -1 ? -1 : errorSum + error;
      for (const { bucket } of top) {
        const m = merged.get(bucket.key);
        if (m) {
          m.docs.push(...bucket.docs);
          m.error -= error;
        } else merged.set(bucket.key, { key: bucket.key, docs: [...bucket.docs], error: -error });
      }
    }
    const kept = [...merged.values()].filter((g) => g.docs.length >= minDocCount);
    const rendered = kept.map((m) => {
      const bucket: Bucket = { key: m.key, docs: m.docs.sort((x, y) => x.id - y.id) };
      const fields = keyFields(m.key);
      if (showErrors) fields.doc_count_error_upper_bound = errorSum === -1 ? -1 : m.error + errorSum;
      return { bucket, out: renderBucket(bucket, fields, b.subs) };
    });
    sortBuckets(rendered, order, true);
    const shown = rendered.slice(0, size);
    for (const r of rendered.slice(size)) other += r.bucket.docs.length;
    return { doc_count_error_upper_bound: errorSum, sum_other_doc_count: other, buckets: shown.map((r) => r.out) };
  };
};

/** ES 5.6 answers boolean terms as 1/0 with `key_as_string` "true"/"false". */
function booleanKey(key: unknown): Output {
  return key === 1 || key === 0 ? { key, key_as_string: key === 1 ? "true" : "false" } : { key };
}

function keyFieldsOf(key: unknown, format: DateFormat | undefined): Output {
  return format && typeof key === "number" ? { key, key_as_string: format.print(key, UTC) } : { key };
}

function termFilter(v: unknown, where: string): (key: unknown) => boolean {
  if (typeof v === "string") {
    const re = regexpPattern(v, (why) => badQuery(`[${where}] ${why}`));
    return (k) => re.test(String(k));
  }
  if (Array.isArray(v)) {
    const set = new Set(v.map(String));
    return (k) => set.has(String(k));
  }
  throw badQuery(`[${where}] must be a regular expression or an array`);
}

interface HistogramSpec {
  /** The bucket key of a value. */
  keyOf(v: number): number;
  /** The key after `k`. */
  next(k: number): number;
  format: DateFormat | undefined;
  zone: Zone;
}

function histogramRun(
  body: Json,
  b: BuildContext,
  spec: HistogramSpec,
  getValues: (d: Doc) => number[],
  bounds: { min?: number; max?: number } | undefined,
): (docs: Doc[]) => Output {
  const minDocCount = body.min_doc_count === undefined ? 0 : intAt(body.min_doc_count, `${b.where}.min_doc_count`);
  const order = parseOrder(body.order, b.where, [{ path: "_key", desc: false }]);
  const keyed = body.keyed === true;
  return (docs) => {
    const groups = new Map<number, Bucket>();
    for (const d of docs) {
      let last: number | undefined;
      for (const v of getValues(d)) {
        const key = spec.keyOf(v);
        if (key === last) continue;
        last = key;
        let g = groups.get(key);
        if (!g) groups.set(key, (g = { key, docs: [] }));
        if (g.docs[g.docs.length - 1] !== d) g.docs.push(d);
      }
    }
    let buckets = [...groups.values()];
    if (minDocCount === 0) {
      const keys = buckets.map((g) => g.key as number);
      let lo = keys.length ? Math.min(...keys) : undefined;
      let hi = keys.length ? Math.max(...keys) : undefined;
      if (bounds?.min !== undefined)
        lo = lo === undefined ? spec.keyOf(bounds.min) : Math.min(lo, spec.keyOf(bounds.min));
      if (bounds?.max !== undefined)
        hi = hi === undefined ? spec.keyOf(bounds.max) : Math.max(hi, spec.keyOf(bounds.max));
      if (lo !== undefined && hi !== undefined) {
        // ES's addEmptyBuckets: empty keys follow next() from each real bucket, and every real
        // bucket stays, even one next() would step over (a repeated hour of a DST end).
        const real = [...keys].sort((x, y) => x - y);
        const filled: Bucket[] = [];
        let guard = 0;
        let k = lo;
        const fillUntil = (end: number, inclusive: boolean): void => {
          while (k < end || (inclusive && k === end)) {
            if (++guard > 100_000) throw badQuery(`[${b.where}] would create too many buckets`);
            filled.push({ key: k, docs: [] });
            k = spec.next(k);
          }
        };
        for (const r of real) {
          fillUntil(r, false);
          filled.push(groups.get(r)!);
          k = spec.next(r);
        }
        fillUntil(hi, true);
        buckets = filled;
      }
    } else buckets = buckets.filter((g) => g.docs.length >= minDocCount);
    const rendered = buckets.map((bucket) => {
      const k = bucket.key as number;
      const keyFields: Output = spec.format ? { key_as_string: spec.format.print(k, spec.zone), key: k } : { key: k };
      return { bucket, out: renderBucket(bucket, keyFields, b.subs) };
    });
    sortBuckets(rendered, order, true);
    if (!keyed) return { buckets: rendered.map((r) => r.out) };
    const out: Output = {};
    for (const r of rendered) out[(r.out.key_as_string as string) ?? javaDouble(r.bucket.key as number)] = r.out;
    return { buckets: out };
  };
}

const histogram: Builder = (body, b) => {
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
  return histogramRun(body, b, spec, (d) => src.values(d), bounds);
};

const CALENDAR: Record<string, Unit> = {
  year: "y",
  "1y": "y",
  quarter: "q",
  "1q": "q",
  month: "M",
  "1M": "M",
  week: "w",
  "1w": "w",
  day: "d",
  "1d": "d",
  hour: "h",
  "1h": "h",
  minute: "m",
  "1m": "m",
  second: "s",
  "1s": "s",
};

const FIXED_UNITS: Partial<Record<Unit, number>> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

const dateHistogram: Builder = (body, b) => {
  onlyKeys(
    body,
    [
      "field",
      "interval",
      "offset",
      "time_zone",
      "format",
      "min_doc_count",
      "extended_bounds",
      "order",
      "keyed",
      "missing",
    ],
    b.where,
  );
  const field = stringAt(body.field, `${b.where}.field`);
  const get = accessor(field);
  const intervalText = stringAt(String(body.interval ?? ""), `${b.where}.interval`);
  if (!intervalText) throw badQuery(`[${b.where}] requires [interval]`);
  const zone = body.time_zone === undefined ? UTC : parseZone(stringAt(body.time_zone, `${b.where}.time_zone`));
  if (!zone) throw badQuery(`[${b.where}.time_zone] [${String(body.time_zone)}] is not known`);
  const format =
    body.format === undefined ? DEFAULT_DATE_FORMAT : parseFormat(stringAt(body.format, `${b.where}.format`));
  if (!format) throw badQuery(`[${b.where}.format] is not supported`);
  const offset = body.offset === undefined ? 0 : parseOffset(body.offset, b.where);
  const unit = own(CALENDAR, intervalText);
  const fixed = unit ? undefined : parseTimeValue(intervalText);
  if (!unit && !fixed) throw badQuery(`[${b.where}.interval] [${intervalText}] is not a calendar or fixed interval`);
  const size = zone === UTC ? (fixed ?? (unit && FIXED_UNITS[unit])) : undefined;
  // Days and shorter units in UTC are fixed lengths: plain arithmetic, no calendar.
  const spec: HistogramSpec = size
    ? {
        keyOf: (v) => Math.floor((v - offset) / size) * size + offset,
        next: (k) => k + size,
        format,
        zone,
      }
    : unit
      ? {
          keyOf: (v) => roundDown(v - offset, unit, zone) + offset,
          next: (k) => nextUnit(k - offset, unit, zone) + offset,
          format,
          zone,
        }
      : {
          keyOf: (v) => roundFixed(v - offset, fixed!, zone) + offset,
          next: (k) => nextFixed(k - offset, fixed!, zone) + offset,
          format,
          zone,
        };
  const eb =
    body.extended_bounds === undefined ? undefined : objectAt(body.extended_bounds, `${b.where}.extended_bounds`);
  const bound = (v: unknown, up: boolean): number | undefined => {
    if (v === undefined) return undefined;
    const t = parseDateMath(v, format, zone, b.ctx.now, up);
    if (t === undefined) throw badQuery(`[${b.where}.extended_bounds] cannot parse [${String(v)}]`);
    return t;
  };
  const bounds = eb && { min: bound(eb.min, false), max: bound(eb.max, false) };
  const missing = body.missing === undefined ? undefined : parseDateMath(body.missing, format, zone, b.ctx.now, false);
  const values = (d: Doc): number[] => {
    const out: number[] = [];
    for (const v of get(d)) {
      const n = toNumber(v);
      if (n !== undefined) out.push(n);
    }
    if (out.length === 0 && missing !== undefined) out.push(missing);
    return out;
  };
  return histogramRun(body, b, spec, values, bounds);
};

function parseOffset(v: unknown, where: string): number {
  if (typeof v === "number") return v;
  const m = /^([+-]?)(.+)$/.exec(String(v));
  const ms = m && parseTimeValue(m[2]!);
  if (!m || ms === undefined || ms === null) throw badQuery(`[${where}.offset] [${String(v)}] is not a time value`);
  return m[1] === "-" ? -ms : ms;
}

interface RangeDef {
  key: string | undefined;
  from: number | undefined;
  to: number | undefined;
}

function rangeBuckets(
  body: Json,
  b: BuildContext,
  parse: (v: unknown, where: string) => number | undefined,
  format: DateFormat | undefined,
  get: (d: Doc) => number[],
  zone: Zone = UTC,
): (docs: Doc[]) => Output {
  if (!Array.isArray(body.ranges) || body.ranges.length === 0) throw badQuery(`[${b.where}] requires [ranges]`);
  const ranges: RangeDef[] = body.ranges.map((r, i) => {
    const o = objectAt(r, `${b.where}.ranges[${i}]`);
    onlyKeys(o, ["key", "from", "to"], `${b.where}.ranges[${i}]`);
    return {
      key: o.key === undefined ? undefined : String(o.key),
      from: o.from === undefined || o.from === null ? undefined : parse(o.from, `${b.where}.ranges[${i}].from`),
      to: o.to === undefined || o.to === null ? undefined : parse(o.to, `${b.where}.ranges[${i}].to`),
    };
  });
  // ES 5.6 answers the ranges sorted by from, then to.
  ranges.sort((x, y) => (x.from ?? -Infinity) - (y.from ?? -Infinity) || (x.to ?? Infinity) - (y.to ?? Infinity));
  const keyed = body.keyed === true;
  const show = (n: number | undefined): string =>
    n === undefined ? "*" : format ? format.print(n, zone) : javaDouble(n);
  return (docs) => {
    const out = ranges.map((r) => {
      const inside = docs.filter((d) =>
        get(d).some((v) => (r.from === undefined || v >= r.from) && (r.to === undefined || v < r.to)),
      );
      const fields: Output = { key: r.key ?? `${show(r.from)}-${show(r.to)}` };
      if (r.from !== undefined) {
        fields.from = r.from;
        if (format) fields.from_as_string = format.print(r.from, zone);
      }
      if (r.to !== undefined) {
        fields.to = r.to;
        if (format) fields.to_as_string = format.print(r.to, zone);
      }
      return renderBucket({ key: fields.key, docs: inside }, fields, b.subs);
    });
    if (!keyed) return { buckets: out };
    const byKey: Output = {};
    for (const o of out) {
      const { key, ...rest } = o;
      byKey[key as string] = rest;
    }
    return { buckets: byKey };
  };
}

const range: Builder = (body, b) => {
  onlyKeys(body, ["field", "ranges", "keyed", "missing"], b.where);
  const src = valueSource({ field: body.field, missing: body.missing }, b.where, []);
  return rangeBuckets(
    body,
    b,
    (v, w) => numberAt(v, w),
    undefined,
    (d) => src.values(d),
  );
};

const dateRange: Builder = (body, b) => {
  onlyKeys(body, ["field", "ranges", "keyed", "format", "time_zone", "missing"], b.where);
  const field = stringAt(body.field, `${b.where}.field`);
  const format =
    body.format === undefined ? DEFAULT_DATE_FORMAT : parseFormat(stringAt(body.format, `${b.where}.format`));
  if (!format) throw badQuery(`[${b.where}.format] is not supported`);
  const zone = body.time_zone === undefined ? UTC : parseZone(stringAt(body.time_zone, `${b.where}.time_zone`));
  if (!zone) throw badQuery(`[${b.where}.time_zone] is not known`);
  const get = accessor(field);
  const parse = (v: unknown, w: string): number => {
    const t = parseDateMath(v, format, zone, b.ctx.now, false);
    if (t === undefined) throw badQuery(`[${w}] cannot parse date [${String(v)}]`);
    return t;
  };
  const values = (d: Doc): number[] =>
    get(d)
      .map(toNumber)
      .filter((n): n is number => n !== undefined);
  return rangeBuckets(body, b, parse, format, values, zone);
};

const filter: Builder = (body, b) => {
  const m = compileQuery(body, { now: b.ctx.now, pushdown: newPushdown() }, false, true);
  return (docs) => {
    const inside = docs.filter((d) => m.test(d));
    return runSubs(b.subs, inside, { doc_count: inside.length });
  };
};

const filters: Builder = (body, b) => {
  onlyKeys(body, ["filters", "other_bucket", "other_bucket_key"], b.where);
  const ctx = { now: b.ctx.now, pushdown: newPushdown() };
  const named = isObject(body.filters);
  if (!named && !Array.isArray(body.filters)) throw badQuery(`[${b.where}.filters] must be an object or an array`);
  const list: [string, Matcher][] = named
    ? Object.entries(body.filters as Json).map(([k, q]) => [k, compileQuery(q, ctx, false, true)])
    : (body.filters as unknown[]).map((q, i) => [String(i), compileQuery(q, ctx, false, true)]);
  const otherKey =
    body.other_bucket_key === undefined ? undefined : stringAt(body.other_bucket_key, `${b.where}.other_bucket_key`);
  const other = body.other_bucket === true || otherKey !== undefined;
  return (docs) => {
    const results: [string, Output][] = list.map(([k, m]) => {
      const inside = docs.filter((d) => m.test(d));
      return [k, runSubs(b.subs, inside, { doc_count: inside.length })];
    });
    if (other) {
      const rest = docs.filter((d) => !list.some(([, m]) => m.test(d)));
      results.push([otherKey ?? "_other_", runSubs(b.subs, rest, { doc_count: rest.length })]);
    }
    if (named) return { buckets: Object.fromEntries(results) };
    return { buckets: results.map(([, o]) => o) };
  };
};

const BUILDERS: Record<string, Builder> = {
  avg: singleValue((v) => (v.length ? sum(v) / v.length : null)),
  min: singleValue((v) => (v.length ? statsOf(v).min : null)),
  max: singleValue((v) => (v.length ? statsOf(v).max : null)),
  sum: singleValue((v) => sum(v)),
  stats,
  extended_stats: extendedStats,
  value_count: valueCount,
  cardinality,
  percentiles,
  top_hits: topHits,
  geo_bounds: geoBounds,
  geo_centroid: geoCentroid,
  terms,
  histogram,
  date_histogram: dateHistogram,
  range,
  date_range: dateRange,
  filter,
  filters,
};
