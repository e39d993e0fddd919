/** A metric's numbers, collected shard by shard from documents or from rows of the column matches. */
import type { Doc } from "../../fields.js";
import { NotFromColumns, type RowSet } from "../../vector/matches.js";
import type { Output } from "../types.js";
import type { ValueSource } from "../values.js";

/** Values of a field, shard by shard (thing type by thing type), with where each shard's end. */
export type Collected = (number[] | Float64Array) & { shardEnds?: number[] };

export const collect = (src: ValueSource, docs: Doc[]): Collected => {
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
export function collectRows(src: ValueSource, { matches, rows, shard: knownShard }: RowSet): Collected {
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
export function oncePerRows(answer: (set: RowSet) => Output): (set: RowSet) => Output {
  const answered = new WeakMap<Int32Array, Output>();
  return (set) => {
    let out = answered.get(set.rows);
    if (!out) answered.set(set.rows, (out = answer(set)));
    return out;
  };
}
