import { UTC } from "../../dates.js";
import { badQuery, numberAt } from "../../errors.js";
import { withRows, type Builder, type Output } from "../types.js";
import { valueSource } from "../values.js";
import { collect, collectRows, oncePerRows, type Collected } from "./collect.js";
import { statsOutput } from "./stats.js";
import { sum } from "./sums.js";

export const extendedStats: Builder = (body, b) => {
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
