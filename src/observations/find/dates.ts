import { LRUCache } from "lru-cache";
import { own } from "./errors.js";
/**
 * Dates as Elasticsearch 5.6 reads and writes them: Joda-style formats, the
 * named formats a dashboard uses, date math (`now-1d/d`, `2014-11-18||/M`),
 * and time zones (fixed offsets or IANA names) for rounding and printing.
 */

export type Zone = (utcMs: number) => number;

const HOUR = 3_600_000;
const MINUTE = 60_000;
const DAY = 86_400_000;

export const UTC: Zone = () => 0;

/** Zones and formats by the name a query gives: bounded, as the names are the caller's. */
const DATE_CACHE = 1000;
const zoneCache = new LRUCache<string, Zone>({ max: DATE_CACHE });

/** A zone by its ES name: `+01:00`, `-08:00`, `Z`, `UTC` or an IANA name. Undefined if unknown. */
export function parseZone(name: string): Zone | undefined {
  const cached = zoneCache.get(name);
  if (cached) return cached;
  let zone: Zone | undefined;
  const fixed = /^([+-])(\d{1,2})(?::?(\d{2}))?$/.exec(name);
  if (name === "Z" || name === "UTC" || name === "GMT") zone = UTC;
  else if (fixed) {
    const offset = (fixed[1] === "-" ? -1 : 1) * (Number(fixed[2]) * HOUR + Number(fixed[3] ?? 0) * MINUTE);
    zone = () => offset;
  } else {
    try {
      const fmt = new Intl.DateTimeFormat("en-US", {
        timeZone: name,
        hourCycle: "h23",
        year: "numeric",
        month: "numeric",
        day: "numeric",
        hour: "numeric",
        minute: "numeric",
        second: "numeric",
      });
      zone = (utcMs) => {
        const parts: Record<string, number> = {};
        for (const p of fmt.formatToParts(new Date(utcMs))) parts[p.type] = Number(p.value);
        const local = Date.UTC(parts.year!, parts.month! - 1, parts.day!, parts.hour!, parts.minute!, parts.second!);
        return local - (utcMs - (((utcMs % 1000) + 1000) % 1000));
      };
    } catch {
      zone = undefined;
    }
  }
  if (zone) zoneCache.set(name, zone);
  return zone;
}

/** The UTC instant of a wall-clock time in `zone` (the earlier one in a DST overlap). */
export function localToUtc(zone: Zone, localMs: number): number {
  const guess = localMs - zone(localMs);
  const offset = zone(guess);
  return localMs - offset;
}

export type Unit = "y" | "M" | "q" | "w" | "d" | "h" | "m" | "s";

/** How coarse a unit is: rounding to it clears every field from this level down. */
const LEVEL: Record<Exclude<Unit, "w">, number> = { y: 0, q: 1, M: 1, d: 2, h: 3, m: 4, s: 5 };

/** Start of the calendar unit holding `utcMs`, in `zone`. */
export function roundDown(utcMs: number, unit: Unit, zone: Zone): number {
  const local = new Date(utcMs + zone(utcMs));
  const y = local.getUTCFullYear();
  let mo = local.getUTCMonth();
  let d = local.getUTCDate();
  let h = local.getUTCHours();
  let mi = local.getUTCMinutes();
  let s = local.getUTCSeconds();
  if (unit === "w") {
    // ISO weeks start on Monday.
    d -= (local.getUTCDay() + 6) % 7;
    h = mi = s = 0;
  } else {
    const level = LEVEL[unit];
    if (level <= 0) mo = 0;
    if (unit === "q") mo -= mo % 3;
    if (level <= 1) d = 1;
    if (level <= 2) h = 0;
    if (level <= 3) mi = 0;
    if (level <= 4) s = 0;
  }
  return localToUtc(zone, Date.UTC(y, mo, d, h, mi, s));
}

/** `utcMs` plus `n` calendar units in `zone`. */
export function addUnits(utcMs: number, n: number, unit: Unit, zone: Zone): number {
  if (unit === "s") return utcMs + n * 1000;
  if (unit === "m") return utcMs + n * MINUTE;
  if (unit === "h") return utcMs + n * HOUR;
  const local = new Date(utcMs + zone(utcMs));
  const y = local.getUTCFullYear();
  const mo = local.getUTCMonth();
  const d = local.getUTCDate();
  const rest = utcMs + zone(utcMs) - Date.UTC(y, mo, d);
  let next: number;
  if (unit === "d") next = Date.UTC(y, mo, d + n);
  else if (unit === "w") next = Date.UTC(y, mo, d + 7 * n);
  else if (unit === "M") next = Date.UTC(y, mo + n, d);
  else if (unit === "q") next = Date.UTC(y, mo + 3 * n, d);
  else next = Date.UTC(y + n, mo, d);
  return localToUtc(zone, next + rest);
}

/** Milliseconds of a fixed time value such as `90m`, `1.5h` is not allowed by ES 5.6; `2d`, `30s`, `500ms`. */
export function parseTimeValue(text: string): number | undefined {
  const m = /^(\d+)(ms|s|m|h|d|w)$/.exec(text.trim());
  if (!m) return undefined;
  const n = Number(m[1]);
  const unit = { ms: 1, s: 1000, m: MINUTE, h: HOUR, d: DAY, w: 7 * DAY }[m[2] as "ms"];
  return n * unit;
}

// ---------------------------------------------------------------- formats

interface Token {
  kind: "year" | "month" | "day" | "hour" | "minute" | "second" | "milli" | "zone" | "literal";
  width: number;
  text?: string;
}

/** A compiled date format: the alternatives of `a||b`, each a pattern, epoch_millis or epoch_second. */
export interface DateFormat {
  readonly name: string;
  parse(text: string, roundUp: boolean, zone: Zone): number | undefined;
  print(utcMs: number, zone: Zone): string;
}

const NAMED: Record<string, string> = {
  date: "yyyy-MM-dd",
  strict_date: "yyyy-MM-dd",
  basic_date: "yyyyMMdd",
  date_time: "yyyy-MM-dd'T'HH:mm:ss.SSSZZ",
  strict_date_time: "yyyy-MM-dd'T'HH:mm:ss.SSSZZ",
  date_time_no_millis: "yyyy-MM-dd'T'HH:mm:ssZZ",
  strict_date_time_no_millis: "yyyy-MM-dd'T'HH:mm:ssZZ",
  basic_date_time: "yyyyMMdd'T'HHmmss.SSSZ",
  date_hour: "yyyy-MM-dd'T'HH",
  date_hour_minute: "yyyy-MM-dd'T'HH:mm",
  date_hour_minute_second: "yyyy-MM-dd'T'HH:mm:ss",
  strict_date_hour_minute_second: "yyyy-MM-dd'T'HH:mm:ss",
  date_hour_minute_second_millis: "yyyy-MM-dd'T'HH:mm:ss.SSS",
  year: "yyyy",
  year_month: "yyyy-MM",
  year_month_day: "yyyy-MM-dd",
  hour_minute: "HH:mm",
  hour_minute_second: "HH:mm:ss",
};

const formatCache = new LRUCache<string, DateFormat>({ max: DATE_CACHE });

/** The ES format string (alternatives joined by `||`), or undefined when a part is not understood. */
export function parseFormat(spec: string): DateFormat | undefined {
  const cached = formatCache.get(spec);
  if (cached) return cached;
  const parts = spec.split("||").map(single);
  if (parts.some((p) => p === undefined)) return undefined;
  const alts = parts as DateFormat[];
  const format: DateFormat = {
    name: spec,
    parse: (text, roundUp, zone) => {
      for (const a of alts) {
        const v = a.parse(text, roundUp, zone);
        if (v !== undefined) return v;
      }
      return undefined;
    },
    print: (ms, zone) => alts[0]!.print(ms, zone),
  };
  formatCache.set(spec, format);
  return format;
}

function single(spec: string): DateFormat | undefined {
  if (spec === "epoch_millis" || spec === "epoch_second") {
    const scale = spec === "epoch_millis" ? 1 : 1000;
    return {
      name: spec,
      parse: (text) => (/^-?\d+(\.\d+)?$/.test(text) ? Math.floor(Number(text) * scale) : undefined),
      print: (ms) => String(Math.floor(ms / scale)),
    };
  }
  if (spec === "strict_date_optional_time" || spec === "date_optional_time") return optionalTime;
  const tokens = tokenize(own(NAMED, spec) ?? spec);
  if (!tokens) return undefined;
  return {
    name: spec,
    parse: (t, up, z) => parsePattern(tokens, t, up, z),
    print: (ms, z) => printPattern(tokens, ms, z),
  };
}

const optionalTime: DateFormat = {
  name: "strict_date_optional_time",
  parse(text, roundUp, zone) {
    const m =
      /^(\d{4})(?:-(\d{2})(?:-(\d{2})(?:T(\d{2})(?::(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?)?)?)?)?(Z|[+-]\d{2}(?::?\d{2})?)?$/.exec(
        text,
      );
    if (!m) return undefined;
    const fields = [m[1], m[2], m[3], m[4], m[5], m[6]];
    const present = fields.filter((f) => f !== undefined).length;
    const ms = m[7] ? Number(m[7].slice(0, 3).padEnd(3, "0")) : 0;
    const local = Date.UTC(
      Number(m[1]),
      Number(m[2] ?? 1) - 1,
      Number(m[3] ?? 1),
      Number(m[4] ?? 0),
      Number(m[5] ?? 0),
      Number(m[6] ?? 0),
      ms,
    );
    const z = m[8] ? parseZone(m[8] === "Z" ? "Z" : m[8])! : zone;
    const utc = localToUtc(z, local);
    if (!roundUp || m[7]) return utc;
    const unit = (["y", "M", "d", "h", "m", "s"] as const)[present - 1]!;
    return addUnits(utc, 1, unit, z) - 1;
  },
  print: (ms, zone) => printPattern(tokenize(NAMED.date_time!)!, ms, zone),
};

function tokenize(pattern: string): Token[] | undefined {
  const tokens: Token[] = [];
  const kinds: Record<string, Token["kind"]> = {
    y: "year",
    Y: "year",
    M: "month",
    d: "day",
    H: "hour",
    m: "minute",
    s: "second",
    S: "milli",
    Z: "zone",
  };
  for (let i = 0; i < pattern.length;) {
    const c = pattern[i]!;
    if (c === "'") {
      const end = pattern.indexOf("'", i + 1);
      if (end < 0) return undefined;
      tokens.push({ kind: "literal", width: 0, text: pattern.slice(i + 1, end) });
      i = end + 1;
      continue;
    }
    const kind = kinds[c];
    if (kind) {
      let j = i;
      while (pattern[j] === c) j++;
      tokens.push({ kind, width: j - i });
      i = j;
      continue;
    }
    if (/[a-zA-Z]/.test(c)) return undefined;
    tokens.push({ kind: "literal", width: 0, text: c });
    i++;
  }
  return tokens;
}

function parsePattern(tokens: Token[], text: string, roundUp: boolean, zone: Zone): number | undefined {
  const v = { year: 1970, month: 1, day: 1, hour: 0, minute: 0, second: 0, milli: 0 };
  let pos = 0;
  let z = zone;
  let smallest: Unit | "ms" = "y";
  const order: (Unit | "ms")[] = ["y", "M", "d", "h", "m", "s", "ms"];
  const unitOf = { year: "y", month: "M", day: "d", hour: "h", minute: "m", second: "s", milli: "ms" } as const;
  for (const t of tokens) {
    if (t.kind === "literal") {
      if (!text.startsWith(t.text!, pos)) return undefined;
      pos += t.text!.length;
      continue;
    }
    if (t.kind === "zone") {
      const m = /^(Z|[+-]\d{2}:?\d{2})/.exec(text.slice(pos));
      if (!m) return undefined;
      z = parseZone(m[1]!)!;
      pos += m[1]!.length;
      continue;
    }
    const max = t.kind === "year" ? 4 : t.kind === "milli" ? 3 : Math.max(2, t.width);
    // eslint-disable-next-line no-restricted-syntax -- only a digit count varies: `\d{1,n}` cannot backtrack
    const m = new RegExp(`^\\d{1,${max}}`).exec(text.slice(pos));
    if (!m) return undefined;
    v[t.kind] = Number(t.kind === "milli" ? m[0].padEnd(3, "0") : m[0]);
    pos += m[0].length;
    const u = unitOf[t.kind];
    if (order.indexOf(u) > order.indexOf(smallest)) smallest = u;
  }
  if (pos !== text.length) return undefined;
  const utc = localToUtc(z, Date.UTC(v.year, v.month - 1, v.day, v.hour, v.minute, v.second, v.milli));
  if (!roundUp || smallest === "ms") return utc;
  return addUnits(utc, 1, smallest, z) - 1;
}

function printPattern(tokens: Token[], utcMs: number, zone: Zone): string {
  const offset = zone(utcMs);
  const d = new Date(utcMs + offset);
  let out = "";
  for (const t of tokens) {
    switch (t.kind) {
      case "literal":
        out += t.text;
        break;
      case "year":
        out += t.width === 2 ? pad(d.getUTCFullYear() % 100, 2) : pad(d.getUTCFullYear(), t.width);
        break;
      case "month":
        out += pad(d.getUTCMonth() + 1, t.width);
        break;
      case "day":
        out += pad(d.getUTCDate(), t.width);
        break;
      case "hour":
        out += pad(d.getUTCHours(), t.width);
        break;
      case "minute":
        out += pad(d.getUTCMinutes(), t.width);
        break;
      case "second":
        out += pad(d.getUTCSeconds(), t.width);
        break;
      case "milli":
        out += pad(d.getUTCMilliseconds(), 3).slice(0, t.width);
        break;
      case "zone":
        out += printOffset(offset, t.width >= 2);
        break;
    }
  }
  return out;
}

function printOffset(offset: number, colon: boolean): string {
  if (offset === 0) return "Z";
  const sign = offset < 0 ? "-" : "+";
  const abs = Math.abs(offset);
  const h = pad(Math.floor(abs / HOUR), 2);
  const m = pad(Math.floor((abs % HOUR) / MINUTE), 2);
  return colon ? `${sign}${h}:${m}` : `${sign}${h}${m}`;
}

function pad(n: number, width: number): string {
  return String(n).padStart(width, "0");
}

/** The default format of a date field: `strict_date_optional_time||epoch_millis`. */
export const DEFAULT_DATE_FORMAT = parseFormat("strict_date_optional_time||epoch_millis")!;

// ---------------------------------------------------------------- date math

const MATH_UNITS = new Set(["y", "M", "w", "d", "h", "H", "m", "s"]);

/**
 * A date value of a query: epoch millis as a number, a formatted date, or date
 * math anchored on `now` or on `<date>||`. `roundUp` is what ES does for `gt`
 * and `lte`: a rounding goes to the last millisecond of the unit.
 */
export function parseDateMath(
  value: unknown,
  format: DateFormat,
  zone: Zone,
  now: number,
  roundUp: boolean,
): number | undefined {
  if (typeof value === "number") return Number.isFinite(value) ? Math.floor(value) : undefined;
  if (typeof value !== "string") return undefined;
  let anchor: number | undefined;
  let math: string;
  if (value.startsWith("now")) {
    anchor = now;
    math = value.slice(3);
  } else {
    const sep = value.indexOf("||");
    if (sep < 0) return format.parse(value, roundUp, zone);
    anchor = format.parse(value.slice(0, sep), false, zone);
    math = value.slice(sep + 2);
  }
  if (anchor === undefined) return undefined;
  let t = anchor;
  for (let i = 0; i < math.length;) {
    const op = math[i]!;
    if (op === "/") {
      const unit = math[i + 1];
      if (!unit || !MATH_UNITS.has(unit)) return undefined;
      const u = (unit === "H" ? "h" : unit) as Unit;
      t = roundDown(t, u, zone);
      if (roundUp) t = addUnits(t, 1, u, zone) - 1;
      i += 2;
      continue;
    }
    if (op !== "+" && op !== "-") return undefined;
    const m = /^(\d*)([yMwdhHms])/.exec(math.slice(i + 1));
    if (!m) return undefined;
    const n = m[1] === "" ? 1 : Number(m[1]);
    t = addUnits(t, op === "-" ? -n : n, (m[2] === "H" ? "h" : m[2]) as Unit, zone);
    i += 1 + m[0].length;
  }
  return t;
}
