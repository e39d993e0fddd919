/** Sums and extremes as ES's metric aggregations compute them, down to the last digits. */
import type { Collected } from "./collect.js";

/**
 * A sum as ES adds one: Kahan-compensated per shard, then the shards' sums compensated in
 * shard order. The same order of additions gives the same last digits (which show in the
 * `_as_string` of a sum of dates).
 */
export function sum(vals: Collected): number {
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

export function statsOf(vals: Collected): { count: number; min: number; max: number; sum: number } {
  let min = Infinity;
  let max = -Infinity;
  for (let i = 0; i < vals.length; i++) {
    const v = vals[i]!;
    if (v < min) min = v;
    if (v > max) max = v;
  }
  return { count: vals.length, min, max, sum: sum(vals) };
}

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
