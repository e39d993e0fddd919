import { UTC } from "../../dates.js";
import type { Output } from "../types.js";
import type { ValueSource } from "../values.js";

/**
 * A metric and, for a date or boolean field, its `_as_string` in the field's format. A
 * boolean field's DocValueFormat writes `value != 0`: a string under single-value metrics
 * (which print format(value).toString()), the boolean itself under stats.
 */
export function withString(out: Output, key: string, value: number | null, src: ValueSource, stats = false): Output {
  out[key] = value;
  if (value !== null && !src.format && src.booleans) {
    out[`${key}_as_string`] = stats ? value !== 0 : String(value !== 0);
    return out;
  }
  if (value !== null && src.format) out[`${key}_as_string`] = src.format.print(value, UTC);
  return out;
}
