import { DEFAULT_DATE_FORMAT, UTC, parseFormat, type DateFormat } from "../../dates.js";
import { badQuery, intAt, onlyKeys, stringAt } from "../../errors.js";
import { accessor, isDateField, type Doc } from "../../fields.js";
import { regexpPattern } from "../../../../patterns/index.js";
import type { RowSet } from "../../vector/matches.js";
import { withRows, type Builder, type Output } from "../types.js";
import { DOCS, renderBucket, rowsHolder, type Bucket, type Holder } from "./holder.js";
import { parseOrder, sortBuckets } from "./order.js";

export const terms: Builder = (body, b) => {
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
  const order = parseOrder(body.order, b.where, [{ path: "_count", desc: true }], b.subs);
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
