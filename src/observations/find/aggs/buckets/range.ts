import { numberAt, onlyKeys } from "../../errors.js";
import type { Builder } from "../types.js";
import { valueSource } from "../values.js";
import { rangeBuckets } from "./range-buckets.js";

export const range: Builder = (body, b) => {
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
