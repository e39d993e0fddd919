/** avg, min, max and sum: one number from the values of the bucket. */
import { withRows, type Builder } from "../types.js";
import { valueSource } from "../values.js";
import { withString } from "./as-string.js";
import { collect, collectRows, oncePerRows, type Collected } from "./collect.js";
import { statsOf, sum as sumOf } from "./sums.js";

function singleValue(reduce: (vals: Collected) => number | null): Builder {
  return (body, b) => {
    const src = valueSource(body, b.where, []);
    return withRows(
      (docs) => withString({}, "value", reduce(collect(src, docs)), src),
      oncePerRows((set) => withString({}, "value", reduce(collectRows(src, set)), src)),
    );
  };
}

export const avg = singleValue((v) => (v.length ? sumOf(v) / v.length : null));
export const min = singleValue((v) => (v.length ? statsOf(v).min : null));
export const max = singleValue((v) => (v.length ? statsOf(v).max : null));
export const sum = singleValue((v) => sumOf(v));
