/**
 * Bucket aggregations (terms, histograms, ranges, filters): they divide the
 * documents into buckets and run their sub-aggregations in each.
 */
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
} from "../dates.js";
import { badQuery, intAt, isObject, numberAt, objectAt, onlyKeys, stringAt, type Json, own } from "../errors.js";
import { accessor, isDateField, javaDouble, toNumber, type Doc } from "../fields.js";
import { compileQuery, newPushdown, type Matcher } from "../query.js";
import { regexpPattern } from "../../../patterns/index.js";
import { inIdOrder, type Matches, type RowSet } from "../vector/matches.js";
import { withRows, type Agg, type Answer, type BuildContext, type Builder, type Output } from "./types.js";
import { valueSource } from "./values.js";

function runSubs(subs: Agg[], docs: Doc[], out: Output): Output {
  for (const s of subs) out[s.name] = s.run(docs);
  return out;
}

/** What a bucket holds: documents (`Doc[]`) or rows of the column matches (`RowSet`). */
interface Holder<S> {
  count(s: S): number;
  empty(): S;
  /** One term's parts from several shards as one, in id order (as ES reduces them). */
  merge(parts: S[]): S;
  runSubs(subs: Agg[], s: S, out: Output): Output;
}

const DOCS: Holder<Doc[]> = {
  count: (docs) => docs.length,
  empty: () => [],
  merge: (parts) => parts.flat().sort((x, y) => x.id - y.id),
  runSubs,
};

function rowsHolder(matches: Matches): Holder<RowSet> {
  return {
    count: (s) => s.rows.length,
    empty: () => ({ matches, rows: new Int32Array(0) }),
    merge: (parts) => {
      // With ids in match order every set is in id order already.
      if (parts.length === 1 && matches.idAscending) return parts[0]!;
      const rows = new Int32Array(parts.reduce((n, p) => n + p.rows.length, 0));
      let at = 0;
      for (const p of parts) {
        rows.set(p.rows, at);
        at += p.rows.length;
      }
      return { matches, rows: inIdOrder(matches, rows) };
    },
    runSubs: (subs, set, out) => {
      for (const s of subs) out[s.name] = s.rows!(set);
      return out;
    },
  };
}

interface Bucket<S = Doc[]> {
  key: unknown;
  docs: S;
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

function sortBuckets<S>(
  h: Holder<S>,
  rendered: { bucket: Bucket<S>; out: Output }[],
  order: Order,
  tieByKey: boolean,
): void {
  rendered.sort((x, y) => {
    for (const o of order) {
      let c: number;
      if (o.path === "_key") c = compareKeys(x.bucket.key, y.bucket.key);
      else if (o.path === "_count") c = h.count(x.bucket.docs) - h.count(y.bucket.docs);
      else c = orderValue(x.out, o.path) - orderValue(y.out, o.path);
      if (c !== 0) return o.desc ? -c : c;
    }
    return tieByKey ? compareKeys(x.bucket.key, y.bucket.key) : 0;
  });
}

function renderBucket<S>(h: Holder<S>, b: Bucket<S>, keyFields: Output, subs: Agg[]): Output {
  return h.runSubs(subs, b.docs, { ...keyFields, doc_count: h.count(b.docs), ...b.extra });
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
  const renderPerShard = order.some((o) => o.path !== "_key" && o.path !== "_count");
  /** The buckets of each shard (thing type) merged as ES 5.6 does, whatever holds them. */
  const reduce = <S>(h: Holder<S>, shards: Iterable<Map<unknown, Bucket<S>>>, keyFields: (key: unknown) => Output) => {
    const shardSize = explicitShardSize ?? (b.ctx.search.shards > 1 ? Math.floor(size * 1.5 + 10) : size);
    let errorSum = 0;
    let other = 0;
    const merged = new Map<unknown, { key: unknown; parts: S[]; count: number; error: number }>();
    for (const groups of shards) {
      const rendered = [...groups.values()].map((bucket) => ({
        bucket,
        out: renderPerShard ? renderBucket(h, bucket, keyFields(bucket.key), b.subs) : {},
      }));
      sortBuckets(h, rendered, order, true);
      const top = rendered.slice(0, shardSize);
      for (const r of rendered.slice(shardSize)) other += h.count(r.bucket.docs);
      // InternalTerms.doReduce of ES 5.6: a shard that returned a full page may have left out
      // a term as frequent as its last one; under any order but count or term it is unbounded.
      const error =
        top.length < shardSize || termOrder ? 0 : countDesc ? h.count(top[top.length - 1]!.bucket.docs) : -1;
      errorSum = errorSum === -1 || error === -1 ? -1 : errorSum + error;
      for (const { bucket } of top) {
        const m = merged.get(bucket.key);
        const count = h.count(bucket.docs);
        if (m) {
          m.parts.push(bucket.docs);
          m.count += count;
          m.error -= error;
        } else merged.set(bucket.key, { key: bucket.key, parts: [bucket.docs], count, error: -error });
      }
    }
    const kept = [...merged.values()].filter((g) => g.count >= minDocCount);
    const rendered = kept.map((m) => {
      const bucket: Bucket<S> = { key: m.key, docs: h.merge(m.parts) };
      const fields = keyFields(m.key);
      if (showErrors) fields.doc_count_error_upper_bound = errorSum === -1 ? -1 : m.error + errorSum;
      return { bucket, out: renderBucket(h, bucket, fields, b.subs) };
    });
    sortBuckets(h, rendered, order, true);
    const shown = rendered.slice(0, size);
    for (const r of rendered.slice(size)) other += h.count(r.bucket.docs);
    return { doc_count_error_upper_bound: errorSum, sum_other_doc_count: other, buckets: shown.map((r) => r.out) };
  };
  const passes = (key: unknown): boolean => (!include || include(key)) && !(exclude && exclude(key));
  const docs = (docs: Doc[]): Output => {
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
        if (!passes(key)) continue;
        let g = groups.get(key);
        if (!g) groups.set(key, (g = { key, docs: [] }));
        if (g.docs[g.docs.length - 1] !== d) g.docs.push(d);
      }
    }
    return reduce(DOCS, shards.values(), (key) => (booleans ? booleanKey(key) : keyFieldsOf(key, format)));
  };
  /** The same grouping over a column: one value a match, each distinct value tested once. */
  const rows = (set: RowSet): Output => {
    const { matches } = set;
    const column = matches.column(field);
    const keys: unknown[] = [];
    const ids = new Map<unknown, number>();
    const idOf = (key: unknown): number => {
      let k = ids.get(key);
      if (k === undefined) ids.set(key, (k = passes(key) ? keys.push(key) - 1 : -1));
      return k;
    };
    const missingId = missing === undefined ? -1 : idOf(missing);
    const n = set.rows.length;
    const keyIds = new Int32Array(n).fill(missingId);
    if (column.kind === "keyword") {
      const { codes, dictionary } = column;
      const byCode = new Int32Array(dictionary.length).fill(-2);
      for (let i = 0; i < n; i++) {
        const c = codes[set.rows[i]!]!;
        if (c < 0) continue;
        if (byCode[c] === -2) byCode[c] = idOf(dictionary[c]);
        keyIds[i] = byCode[c]!;
      }
    } else if (column.kind === "number")
      for (let i = 0; i < n; i++) {
        const v = column.values[set.rows[i]!]!;
        if (v === v) keyIds[i] = idOf(v);
      }
    return reduce(rowsHolder(matches), groupByShard(set, keyIds, keys), (key) => keyFieldsOf(key, format));
  };
  return withRows(docs, rows);
};

/**
 * The rows of a set by shard and key (`keyIds` into `keys`, -1 for none), each group in the
 * set's order and each shard's keys in the order first met, as the document path groups them.
 */
function groupByShard(set: RowSet, keyIds: Int32Array, keys: unknown[]): Map<unknown, Bucket<RowSet>>[] {
  const { matches, rows } = set;
  const shardOf = matches.shard;
  const shards = matches.shards.length;
  const width = keys.length;
  const counts = new Int32Array(shards * width);
  const firstMet: number[][] = Array.from({ length: shards }, () => []);
  // Each row's group (shard and key) written over its key: the caller's array is done with.
  const groupOf = keyIds;
  for (let i = 0; i < rows.length; i++) {
    const k = keyIds[i]!;
    if (k < 0) continue;
    const s = shardOf[rows[i]!]!;
    const g = s * width + k;
    groupOf[i] = g;
    if (counts[g]!++ === 0) firstMet[s]!.push(k);
  }
  // Each group a slice of one array, in the set's order: counted places, then filled.
  const starts = new Int32Array(shards * width);
  for (let g = 1; g < starts.length; g++) starts[g] = starts[g - 1]! + counts[g - 1]!;
  const at = starts.slice();
  const grouped = new Int32Array(rows.length);
  for (let i = 0; i < rows.length; i++) {
    const g = groupOf[i]!;
    if (g >= 0) grouped[at[g]!++] = rows[i]!;
  }
  const group = (g: number): RowSet => ({
    matches,
    rows: grouped.subarray(starts[g]!, starts[g]! + counts[g]!),
    shard: Math.floor(g / width),
  });
  return firstMet
    .map((met, s) => new Map(met.map((k) => [keys[k], { key: keys[k], docs: group(s * width + k) }])))
    .filter((groups) => groups.size > 0);
}

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

/** Where a histogram's values come from when it runs over rows: the field and its value for a match without one. */
interface HistogramValues {
  field: string;
  missing: number | undefined;
}

function histogramRun(
  body: Json,
  b: BuildContext,
  spec: HistogramSpec,
  getValues: (d: Doc) => number[],
  bounds: { min?: number; max?: number } | undefined,
  source: HistogramValues,
): Answer {
  const minDocCount = body.min_doc_count === undefined ? 0 : intAt(body.min_doc_count, `${b.where}.min_doc_count`);
  const order = parseOrder(body.order, b.where, [{ path: "_key", desc: false }]);
  const keyed = body.keyed === true;
  /** From the buckets of the values met: empty buckets, min_doc_count, order, keys, whatever holds them. */
  const answer = <S>(h: Holder<S>, groups: Map<number, Bucket<S>>): Output => {
    let buckets = [...groups.values()];
    if (minDocCount === 0) {
      const keys = buckets.map((g) => g.key as number);
      let lo: number | undefined;
      let hi: number | undefined;
      for (const key of keys) {
        if (lo === undefined || key < lo) lo = key;
        if (hi === undefined || key > hi) hi = key;
      }
      if (bounds?.min !== undefined)
        lo = lo === undefined ? spec.keyOf(bounds.min) : Math.min(lo, spec.keyOf(bounds.min));
      if (bounds?.max !== undefined)
        hi = hi === undefined ? spec.keyOf(bounds.max) : Math.max(hi, spec.keyOf(bounds.max));
      if (lo !== undefined && hi !== undefined) {
        // ES's addEmptyBuckets: empty keys follow next() from each real bucket, and every real
        // bucket stays, even one next() would step over (a repeated hour of a DST end).
        const real = [...keys].sort((x, y) => x - y);
        const filled: Bucket<S>[] = [];
        let guard = 0;
        let k = lo;
        const fillUntil = (end: number, inclusive: boolean): void => {
          while (k < end || (inclusive && k === end)) {
            if (++guard > 100_000) throw badQuery(`[${b.where}] would create too many buckets`);
            filled.push({ key: k, docs: h.empty() });
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
    } else buckets = buckets.filter((g) => h.count(g.docs) >= minDocCount);
    const rendered = buckets.map((bucket) => {
      const k = bucket.key as number;
      const keyFields: Output = spec.format ? { key_as_string: spec.format.print(k, spec.zone), key: k } : { key: k };
      return { bucket, out: renderBucket(h, bucket, keyFields, b.subs) };
    });
    sortBuckets(h, rendered, order, true);
    if (!keyed) return { buckets: rendered.map((r) => r.out) };
    const out: Output = {};
    for (const r of rendered) out[(r.out.key_as_string as string) ?? javaDouble(r.bucket.key as number)] = r.out;
    return { buckets: out };
  };
  const docs = (docs: Doc[]): Output => {
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
    return answer(DOCS, groups);
  };
  const rows = (set: RowSet): Output => {
    const { matches } = set;
    const values = matches.numbers(source.field);
    return answer(rowsHolder(matches), histogramGroups(set, values, source.missing, spec.keyOf));
  };
  return withRows(docs, rows);
}

/**
 * A histogram's buckets over rows. Where the values ascend along the set (the matches
 * are in timestamp order), a bucket is a run of the set found by galloping over the
 * key: rounding down is monotonic, so the keys of a sorted run of values are too, and
 * `keyOf` is called a few times a bucket rather than once a row.
 */
function histogramGroups(
  { matches, rows }: RowSet,
  values: Float64Array,
  missing: number | undefined,
  keyOf: (v: number) => number,
): Map<number, Bucket<RowSet>> {
  const groups = new Map<number, Bucket<RowSet>>();
  const n = rows.length;
  let ascending = true;
  for (let i = 0; i < n && ascending; i++) {
    const v = values[rows[i]!]!;
    if (!(i === 0 ? v === v : v >= values[rows[i - 1]!]!)) ascending = false;
  }
  if (ascending) {
    const keyAt = (i: number): number => keyOf(values[rows[i]!]!);
    for (let start = 0; start < n;) {
      const key = keyAt(start);
      // [lo, hi): lo has the key, hi does not (or is the end).
      let lo = start;
      let step = 1;
      let hi = start + 1;
      while (hi < n && keyAt(hi) === key) {
        lo = hi;
        step *= 2;
        hi = Math.min(n, lo + step);
      }
      while (hi - lo > 1) {
        const mid = (lo + hi) >>> 1;
        if (keyAt(mid) === key) lo = mid;
        else hi = mid;
      }
      // A key met again would mean a rounding that is not monotonic: then bucket row by row.
      if (groups.has(key)) break;
      groups.set(key, { key, docs: { matches, rows: rows.subarray(start, hi) } });
      start = hi;
      if (start === n) return groups;
    }
    groups.clear();
  }
  const lists = new Map<number, number[]>();
  for (let i = 0; i < n; i++) {
    let v = values[rows[i]!]!;
    if (v !== v) {
      if (missing === undefined) continue;
      v = missing;
    }
    const key = keyOf(v);
    const list = lists.get(key);
    if (list) list.push(rows[i]!);
    else lists.set(key, [rows[i]!]);
  }
  for (const [key, list] of lists) groups.set(key, { key, docs: { matches, rows: Int32Array.from(list) } });
  return groups;
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
  return histogramRun(body, b, spec, (d) => src.values(d), bounds, src);
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
  return histogramRun(body, b, spec, values, bounds, { field, missing });
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
      return renderBucket(DOCS, { key: fields.key, docs: inside }, fields, b.subs);
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

export const BUCKET_BUILDERS: Record<string, Builder> = {
  terms,
  histogram,
  date_histogram: dateHistogram,
  range,
  date_range: dateRange,
  filter,
  filters,
};
