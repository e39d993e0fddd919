import { UTC } from "../../dates.js";
import { badQuery, numberAt } from "../../errors.js";
import { javaDouble } from "../../fields.js";
import { withRows, type Builder, type Output } from "../types.js";
import { valueSource } from "../values.js";
import { collect, collectRows, oncePerRows, type Collected } from "./collect.js";

/**
 * ES 5.6's t-digest keeps every value as its own centroid while the set is
 * small, and then interpolates linearly between neighbours at q*(n-1): the
 * same as this exact computation. Large sets may differ in the last digits.
 */
export const percentiles: Builder = (body, b) => {
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
