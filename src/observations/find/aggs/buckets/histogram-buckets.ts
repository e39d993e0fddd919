/** What histogram and date_histogram share: keys from values, empty buckets, order, over documents or rows. */
import type { DateFormat, Zone } from "../../dates.js";
import { badQuery, intAt, type Json } from "../../errors.js";
import { javaDouble, type Doc } from "../../fields.js";
import type { RowSet } from "../../vector/matches.js";
import { withRows, type Answer, type BuildContext, type Output } from "../types.js";
import { DOCS, renderBucket, rowsHolder, type Bucket, type Holder } from "./holder.js";
import { parseOrder, sortBuckets } from "./order.js";

export interface HistogramSpec {
  /** The bucket key of a value. */
  keyOf(v: number): number;
  /** The key after `k`. */
  next(k: number): number;
  format: DateFormat | undefined;
  zone: Zone;
}

/** Where a histogram's values come from when it runs over rows: the field and its value for a match without one. */
export interface HistogramValues {
  field: string;
  missing: number | undefined;
}

export function histogramRun(
  body: Json,
  b: BuildContext,
  spec: HistogramSpec,
  getValues: (d: Doc) => number[],
  bounds: { min?: number; max?: number } | undefined,
  source: HistogramValues,
): Answer {
  const minDocCount = body.min_doc_count === undefined ? 0 : intAt(body.min_doc_count, `${b.where}.min_doc_count`);
  const order = parseOrder(body.order, b.where, [{ path: "_key", desc: false }], b.subs);
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
