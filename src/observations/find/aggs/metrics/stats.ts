import { withRows, type Builder, type Output } from "../types.js";
import { valueSource, type ValueSource } from "../values.js";
import { withString } from "./as-string.js";
import { collect, collectRows, oncePerRows, type Collected } from "./collect.js";
import { statsOf } from "./sums.js";

export const stats: Builder = (body, b) => {
  const src = valueSource(body, b.where, []);
  return withRows(
    (docs) => statsOutput(collect(src, docs), src),
    oncePerRows((set) => statsOutput(collectRows(src, set), src)),
  );
};

export function statsOutput(vals: Collected, src: ValueSource): Output {
  const s = statsOf(vals);
  const has = s.count > 0;
  const out: Output = { count: s.count };
  withString(out, "min", has ? s.min : null, src, true);
  withString(out, "max", has ? s.max : null, src, true);
  withString(out, "avg", has ? s.sum / s.count : null, src, true);
  withString(out, "sum", has ? s.sum : null, src, true);
  return out;
}
