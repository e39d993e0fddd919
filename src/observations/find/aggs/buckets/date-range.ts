import { DEFAULT_DATE_FORMAT, UTC, parseDateMath, parseFormat, parseZone } from "../../dates.js";
import { badQuery, onlyKeys, stringAt } from "../../errors.js";
import { accessor, toNumber, type Doc } from "../../fields.js";
import type { Builder } from "../types.js";
import { rangeBuckets } from "./range-buckets.js";

export const dateRange: Builder = (body, b) => {
  onlyKeys(body, ["field", "ranges", "keyed", "format", "time_zone", "missing"], b.where);
  const field = stringAt(body.field, `${b.where}.field`);
  const format =
    body.format === undefined ? DEFAULT_DATE_FORMAT : parseFormat(stringAt(body.format, `${b.where}.format`));
  if (!format) throw badQuery(`[${b.where}.format] is not supported`);
  const zone = body.time_zone === undefined ? UTC : parseZone(stringAt(body.time_zone, `${b.where}.time_zone`));
  if (!zone) throw badQuery(`[${b.where}.time_zone] is not known`);
  const get = accessor(field);
  const parse = (v: unknown, w: string): number => {
    const t = parseDateMath(v, format, zone, b.ctx.now, false);
    if (t === undefined) throw badQuery(`[${w}] cannot parse date [${String(v)}]`);
    return t;
  };
  const values = (d: Doc): number[] =>
    get(d)
      .map(toNumber)
      .filter((n): n is number => n !== undefined);
  return rangeBuckets(body, b, parse, format, values, zone);
};
