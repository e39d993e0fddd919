/**
 * Metric aggregations (avg ... geo_centroid): one value, or a few, computed
 * from the documents of their bucket; they hold no sub-aggregations.
 */
import { UTC } from "../dates.js";
import { badQuery, intAt, numberAt, onlyKeys, stringAt, type Json } from "../errors.js";
import {
  accessor,
  geoAccessor,
  geoPointsOf,
  javaDouble,
  noteWholeSource,
  quantize,
  type Doc,
  type GeoPoint,
} from "../fields.js";
import { compileSort, compileSource, hitOf, sortValuesOf } from "../hits.js";
import { FIND_LIMITS, overLimit } from "../limits.js";
import type { RowSet } from "../vector/matches.js";
import { NotFromColumns } from "../vector/matches.js";
import { withRows, type Builder, type Output } from "./types.js";
import { valueSource, type ValueSource } from "./values.js";

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

function singleValue(reduce: (vals: Collected) => number | null): Builder {
  return (body, b) => {
    const src = valueSource(body, b.where, []);
    return withRows(
      (docs) => withString({}, "value", reduce(collect(src, docs)), src),
      oncePerRows((set) => withString({}, "value", reduce(collectRows(src, set)), src)),
    );
  };
}

/** Values of a field, shard by shard (thing type by thing type), with where each shard's end. */
type Collected = (number[] | Float64Array) & { shardEnds?: number[] };

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
  for (let i = 0; i < vals.length; i++) {
    const v = vals[i]!;
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

/**
 * `collect` over rows of the column matches: the same values in the same order (shards in
 * name order, each in the bucket's order), a missing value where a match has none.
 */
function collectRows(src: ValueSource, { matches, rows, shard: knownShard }: RowSet): Collected {
  if (src.booleans) throw new NotFromColumns(src.field);
  const values = matches.numbers(src.field);
  const shard = matches.shard;
  const missing = src.missing;
  // In the bucket's order first: a bucket of one shard (a thing's, a thing type's) is then done.
  const out: Collected = new Float64Array(rows.length);
  let oneShard = true;
  let n = 0;
  if (knownShard !== undefined)
    for (let i = 0; i < rows.length; i++) {
      const v = values[rows[i]!]!;
      if (v === v) out[n++] = v;
      else if (missing !== undefined) out[n++] = missing;
    }
  else {
    const first = rows.length > 0 ? shard[rows[0]!]! : -1;
    for (let i = 0; i < rows.length; i++) {
      const m = rows[i]!;
      if (shard[m] !== first) oneShard = false;
      const v = values[m]!;
      if (v === v) out[n++] = v;
      else if (missing !== undefined) out[n++] = missing;
    }
  }
  if (oneShard) {
    const one: Collected = out.subarray(0, n);
    one.shardEnds = rows.length > 0 ? [n] : [];
    return one;
  }
  // Else counted per shard, then each value put at its shard's place.
  const docs = new Int32Array(matches.shards.length);
  const counts = new Int32Array(matches.shards.length);
  for (let i = 0; i < rows.length; i++) {
    const m = rows[i]!;
    const s = shard[m]!;
    docs[s]!++;
    if (values[m] === values[m] || missing !== undefined) counts[s]!++;
  }
  const at = new Int32Array(counts.length);
  const ends: number[] = [];
  let total = 0;
  for (let s = 0; s < counts.length; s++) {
    at[s] = total;
    total += counts[s]!;
    if (docs[s]! > 0) ends.push(total);
  }
  for (let i = 0; i < rows.length; i++) {
    const m = rows[i]!;
    const v = values[m]!;
    if (v === v) out[at[shard[m]!]!++] = v;
    else if (missing !== undefined) out[at[shard[m]!]!++] = missing;
  }
  const byShard: Collected = out.subarray(0, total);
  byShard.shardEnds = ends;
  return byShard;
}

/**
 * A metric over rows, computed once per rows array: a term's bucket answered for its
 * shard (to order the shard's terms) and again after the merge is the same array when
 * one shard returned it, and its answer is the same. The aggregation is still run (and
 * its buckets counted) each time, as over documents.
 */
function oncePerRows(answer: (set: RowSet) => Output): (set: RowSet) => Output {
  const answered = new WeakMap<Int32Array, Output>();
  return (set) => {
    let out = answered.get(set.rows);
    if (!out) answered.set(set.rows, (out = answer(set)));
    return out;
  };
}

const stats: Builder = (body, b) => {
  const src = valueSource(body, b.where, []);
  return withRows(
    (docs) => statsOutput(collect(src, docs), src),
    oncePerRows((set) => statsOutput(collectRows(src, set), src)),
  );
};

function statsOutput(vals: Collected, src: ValueSource): Output {
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
  const answer = (vals: Collected): Output => {
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
    const squares: Collected = Float64Array.from(vals, (v) => v * v);
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
  return withRows(
    (docs) => answer(collect(src, docs)),
    oncePerRows((set) => answer(collectRows(src, set))),
  );
};

/** A sum with Kahan compensation, as ES's metric aggregations add. */
function kahanSum(vals: ArrayLike<number>): number {
  let sum = 0;
  let c = 0;
  for (let i = 0; i < vals.length; i++) {
    const v = vals[i]!;
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
  const field = stringAt(body.field, `${b.where}.field`);
  const get = accessor(field);
  const docs = (docs: Doc[]): Output => {
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
  // A column holds one value a match, counted once either way.
  return withRows(docs, ({ matches, rows }) => {
    const column = matches.column(field);
    let n = 0;
    if (column.kind === "number") for (const m of rows) n += column.values[m] === column.values[m] ? 1 : 0;
    else if (column.kind === "keyword") for (const m of rows) n += column.codes[m]! >= 0 ? 1 : 0;
    return { value: n };
  });
};

/** Exact below ES's default precision_threshold (3000), which is where dashboards live. */
const cardinality: Builder = (body, b) => {
  onlyKeys(body, ["field", "missing", "precision_threshold"], b.where);
  const field = stringAt(body.field, `${b.where}.field`);
  const get = accessor(field);
  const missing = body.missing;
  const rows = ({ matches, rows }: RowSet): Output => {
    const column = matches.column(field);
    const seen = new Set<unknown>();
    let none = false;
    if (column.kind === "number")
      for (const m of rows) {
        const v = column.values[m]!;
        if (v === v) seen.add(v);
        else none = true;
      }
    else if (column.kind === "keyword") {
      const met = new Uint8Array(column.dictionary.length);
      for (const m of rows) {
        const c = column.codes[m]!;
        if (c >= 0) met[c] = 1;
        else none = true;
      }
      met.forEach((x, c) => x && seen.add(column.dictionary[c]));
    } else none = rows.length > 0;
    // Added last, as a value it may equal was added before it in the document path too: a set ignores order.
    if (none && missing !== undefined) seen.add(missing);
    return { value: seen.size };
  };
  return withRows((docs) => {
    const seen = new Set<unknown>();
    for (const d of docs) {
      const vs = get(d);
      if (vs.length === 0 && missing !== undefined) seen.add(missing);
      for (const v of vs) seen.add(typeof v === "object" ? JSON.stringify(v) : v);
    }
    return { value: seen.size };
  }, rows);
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
  const answer = (collected: Collected): Output => {
    const vals = Float64Array.from(collected).sort();
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
  return withRows(
    (docs) => answer(collect(src, docs)),
    oncePerRows((set) => answer(collectRows(src, set))),
  );
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
  noteWholeSource();
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

function geoValues(body: Json, where: string, extra: string[]): { field: string; get: (doc: Doc) => GeoPoint[] } {
  onlyKeys(body, ["field", ...extra], where);
  const field = stringAt(body.field, `${where}.field`);
  const get = geoAccessor(field);
  return { field, get: (doc) => get(doc).map(quantize) };
}

/**
 * Each match's geo points from the column matches, a keyword column's parsed once per
 * value; a numeric column holds no point.
 */
function geoRows(field: string, { matches, rows }: RowSet, visit: (p: GeoPoint) => void): void {
  const column = matches.column(field);
  if (column.kind !== "keyword") return;
  const points = column.dictionary.map((v) => geoPointsOf(v).map(quantize));
  for (const m of rows) {
    const c = column.codes[m]!;
    if (c >= 0) for (const p of points[c]!) visit(p);
  }
}

const geoBounds: Builder = (body, b) => {
  const { field, get } = geoValues(body, b.where, ["wrap_longitude"]);
  const wrap = body.wrap_longitude !== false;
  const bounds = (each: (visit: (p: GeoPoint) => void) => void): Output => {
    let top = -Infinity;
    let bottom = Infinity;
    let posLeft = Infinity;
    let posRight = -Infinity;
    let negLeft = Infinity;
    let negRight = -Infinity;
    each((p) => {
      top = Math.max(top, p.lat);
      bottom = Math.min(bottom, p.lat);
      if (p.lon >= 0) {
        posLeft = Math.min(posLeft, p.lon);
        posRight = Math.max(posRight, p.lon);
      } else {
        negLeft = Math.min(negLeft, p.lon);
        negRight = Math.max(negRight, p.lon);
      }
    });
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
  return withRows(
    (docs) =>
      bounds((visit) => {
        for (const d of docs) for (const p of get(d)) visit(p);
      }),
    (set) => bounds((visit) => geoRows(field, set, visit)),
  );
};

const geoCentroid: Builder = (body, b) => {
  const { get } = geoValues(body, b.where, []);
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

export const METRIC_BUILDERS: Record<string, Builder> = {
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
};
