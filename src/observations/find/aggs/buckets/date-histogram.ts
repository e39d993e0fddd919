import {
  DEFAULT_DATE_FORMAT,
  UTC,
  nextFixed,
  nextUnit,
  parseDateMath,
  parseFormat,
  parseTimeValue,
  parseZone,
  roundDown,
  roundFixed,
  type Unit,
} from "../../dates.js";
import { badQuery, objectAt, onlyKeys, own, stringAt } from "../../errors.js";
import { accessor, toNumber, type Doc } from "../../fields.js";
import type { Builder } from "../types.js";
import { histogramRun, type HistogramSpec } from "./histogram-buckets.js";

const CALENDAR: Record<string, Unit> = {
  year: "y",
  "1y": "y",
  quarter: "q",
  "1q": "q",
  month: "M",
  "1M": "M",
  week: "w",
  "1w": "w",
  day: "d",
  "1d": "d",
  hour: "h",
  "1h": "h",
  minute: "m",
  "1m": "m",
  second: "s",
  "1s": "s",
};

const FIXED_UNITS: Partial<Record<Unit, number>> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

export const dateHistogram: Builder = (body, b) => {
  onlyKeys(
    body,
    [
      "field",
      "interval",
      "offset",
      "time_zone",
      "format",
      "min_doc_count",
      "extended_bounds",
      "order",
      "keyed",
      "missing",
    ],
    b.where,
  );
  const field = stringAt(body.field, `${b.where}.field`);
  const get = accessor(field);
  const intervalText = stringAt(String(body.interval ?? ""), `${b.where}.interval`);
  if (!intervalText) throw badQuery(`[${b.where}] requires [interval]`);
  const zone = body.time_zone === undefined ? UTC : parseZone(stringAt(body.time_zone, `${b.where}.time_zone`));
  if (!zone) throw badQuery(`[${b.where}.time_zone] [${String(body.time_zone)}] is not known`);
  const format =
    body.format === undefined ? DEFAULT_DATE_FORMAT : parseFormat(stringAt(body.format, `${b.where}.format`));
  if (!format) throw badQuery(`[${b.where}.format] is not supported`);
  const offset = body.offset === undefined ? 0 : parseOffset(body.offset, b.where);
  const unit = own(CALENDAR, intervalText);
  const fixed = unit ? undefined : parseTimeValue(intervalText);
  if (!unit && !fixed) throw badQuery(`[${b.where}.interval] [${intervalText}] is not a calendar or fixed interval`);
  const size = zone === UTC ? (fixed ?? (unit && FIXED_UNITS[unit])) : undefined;
  // Days and shorter units in UTC are fixed lengths: plain arithmetic, no calendar.
  const spec: HistogramSpec = size
    ? {
        keyOf: (v) => Math.floor((v - offset) / size) * size + offset,
        next: (k) => k + size,
        format,
        zone,
      }
    : unit
      ? {
          keyOf: (v) => roundDown(v - offset, unit, zone) + offset,
          next: (k) => nextUnit(k - offset, unit, zone) + offset,
          format,
          zone,
        }
      : {
          keyOf: (v) => roundFixed(v - offset, fixed!, zone) + offset,
          next: (k) => nextFixed(k - offset, fixed!, zone) + offset,
          format,
          zone,
        };
  const eb =
    body.extended_bounds === undefined ? undefined : objectAt(body.extended_bounds, `${b.where}.extended_bounds`);
  const bound = (v: unknown, up: boolean): number | undefined => {
    if (v === undefined) return undefined;
    const t = parseDateMath(v, format, zone, b.ctx.now, up);
    if (t === undefined) throw badQuery(`[${b.where}.extended_bounds] cannot parse [${String(v)}]`);
    return t;
  };
  const bounds = eb && { min: bound(eb.min, false), max: bound(eb.max, false) };
  const missing = body.missing === undefined ? undefined : parseDateMath(body.missing, format, zone, b.ctx.now, false);
  const values = (d: Doc): number[] => {
    const out: number[] = [];
    for (const v of get(d)) {
      const n = toNumber(v);
      if (n !== undefined) out.push(n);
    }
    if (out.length === 0 && missing !== undefined) out.push(missing);
    return out;
  };
  return histogramRun(body, b, spec, values, bounds, { field, missing });
};

function parseOffset(v: unknown, where: string): number {
  if (typeof v === "number") return v;
  const m = /^([+-]?)(.+)$/.exec(String(v));
  const ms = m && parseTimeValue(m[2]!);
  if (!m || ms === undefined || ms === null) throw badQuery(`[${where}.offset] [${String(v)}] is not a time value`);
  return m[1] === "-" ? -ms : ms;
}
