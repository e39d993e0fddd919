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
/** Every offset transition of the zones in use happens on a quarter hour. */
const QUARTER = 900_000;

export const UTC: Zone = () => 0;

/** Zones and formats by the name a query gives: bounded, as the names are the caller's. */
const DATE_CACHE = 1000;
const zoneCache = new LRUCache<string, Zone>({ max: DATE_CACHE });
/** Zones whose offset never changes: they have no transitions to look for. */
const fixedZones = new WeakSet<Zone>([UTC]);

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
    fixedZones.add(zone);
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
      // Offsets change only on quarter hours, so one lookup serves a whole quarter.
      const quarters = new Map<number, number>();
      zone = (utcMs) => {
        const q = Math.floor(utcMs / QUARTER);
        let offset = quarters.get(q);
        if (offset === undefined) {
          const at = q * QUARTER;
          const parts: Record<string, number> = {};
          for (const p of fmt.formatToParts(new Date(at))) parts[p.type] = Number(p.value);
          offset = Date.UTC(parts.year!, parts.month! - 1, parts.day!, parts.hour!, parts.minute!, parts.second!) - at;
          if (quarters.size > 100_000) quarters.clear();
          quarters.set(q, offset);
        }
        return offset;
      };
    } catch {
      zone = undefined;
    }
  }
  if (zone) zoneCache.set(name, zone);
  return zone;
}

/**
 * The offsets under which a wall-clock time exists in `zone`, earliest instant first
 * (java.time's ZoneRules.getValidOffsets): one normally, two in the repeated hour
 * of a DST end, none in the skipped hour of a DST start.
 */
export function validOffsets(zone: Zone, localMs: number): number[] {
  if (fixedZones.has(zone)) return [zone(localMs)];
  const candidates = new Set([zone(localMs - DAY), zone(localMs + DAY), zone(localMs - zone(localMs))]);
  return [...candidates].filter((o) => zone(localMs - o) === o).sort((a, b) => b - a);
}

/**
 * The UTC instant of a wall-clock time in `zone`, as java.time resolves it (and ES 5.6's
 * Joda did): in a repeated hour the offset `prefer` if it is valid there, else the
 * earlier instant; in a skipped hour the time moves forward by the gap.
 */
export function localToUtc(zone: Zone, localMs: number, prefer?: number): number {
  const valid = validOffsets(zone, localMs);
  if (valid.length === 0) return localMs - zone(localMs - DAY);
  if (prefer !== undefined && valid.includes(prefer)) return localMs - prefer;
  return localMs - valid[0]!;
}

const transitionCache = new WeakMap<Zone, Map<number, number[]>>();

/** The instants in a UTC year at which `zone` changes its offset, ascending. */
function transitionsOfYear(zone: Zone, year: number): number[] {
  let byYear = transitionCache.get(zone);
  if (!byYear) transitionCache.set(zone, (byYear = new Map()));
  const cached = byYear.get(year);
  if (cached) return cached;
  const out: number[] = [];
  const from = Date.UTC(year, 0, 1);
  const to = Date.UTC(year + 1, 0, 1);
  const step = 6 * HOUR;
  for (let t = from; t < to; t += step) {
    if (zone(t) === zone(t + step)) continue;
    // The first quarter hour of the new offset.
    let lo = t / QUARTER;
    let hi = (t + step) / QUARTER;
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2);
      if (zone(mid * QUARTER) === zone(t)) lo = mid;
      else hi = mid;
    }
    out.push(hi * QUARTER);
  }
  byYear.set(year, out);
  return out;
}

/** The latest offset transition of `zone` at or before `utcMs`, if any within a year. */
export function previousTransition(zone: Zone, utcMs: number): number | undefined {
  if (fixedZones.has(zone)) return undefined;
  const year = new Date(utcMs).getUTCFullYear();
  for (const y of [year, year - 1]) {
    const ts = transitionsOfYear(zone, y);
    for (let i = ts.length - 1; i >= 0; i--) if (ts[i]! <= utcMs) return ts[i];
  }
  return undefined;
}

export type Unit = "y" | "M" | "q" | "w" | "d" | "h" | "m" | "s";

/** How coarse a unit is: rounding to it clears every field from this level down. */
const LEVEL: Record<Exclude<Unit, "w">, number> = { y: 0, q: 1, M: 1, d: 2, h: 3, m: 4, s: 5 };

/** Days and longer units round to a local midnight; hours, minutes and seconds to a local time of day. */
const toMidnight = (unit: Unit): boolean => unit !== "h" && unit !== "m" && unit !== "s";

/** The wall-clock time `localMs` with every field below `unit` cleared. */
function truncateLocal(localMs: number, unit: Unit): number {
  const local = new Date(localMs);
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
  return Date.UTC(y, mo, d, h, mi, s);
}

/**
 * Start of the calendar unit holding `utcMs`, in `zone`, as java.time rounds it
 * (OpenSearch's Rounding, and ES 5.6's Joda rounding with the original offset):
 * a day or longer starts at the first instant of its local midnight; an hour, minute or
 * second is the latest local truncation no later than the instant, so the repeated hour of
 * a DST end is two hours, and a rounding never crosses back over a transition.
 */
export function roundDown(utcMs: number, unit: Unit, zone: Zone): number {
  if (toMidnight(unit)) return localToUtc(zone, truncateLocal(utcMs + zone(utcMs), unit));
  let instant = utcMs;
  for (;;) {
    const truncated = truncateLocal(instant + zone(instant), unit);
    let rounded: number | undefined;
    for (const o of validOffsets(zone, truncated).reverse()) {
      if (truncated - o <= instant) {
        rounded = truncated - o;
        break;
      }
    }
    const transition = previousTransition(zone, instant - 1);
    if (rounded !== undefined && (transition === undefined || transition <= rounded)) return rounded;
    if (transition === undefined) return truncated - zone(instant);
    instant = transition - 1000;
  }
}

/** The start of the calendar unit after the one starting at `utcMs` (OpenSearch's nextRoundingValue). */
export function nextUnit(utcMs: number, unit: Unit, zone: Zone): number {
  if (!toMidnight(unit)) return roundDown(utcMs + FIXED_UNIT[unit], unit, zone);
  const midnight = truncateLocal(utcMs + zone(utcMs), unit);
  return localToUtc(zone, truncateLocal(shiftLocal(midnight, 1, unit), unit));
}

const FIXED_UNIT = { h: HOUR, m: MINUTE, s: 1000 } as Record<Unit, number>;

/** A wall-clock time moved by `n` calendar units (days and longer). */
function shiftLocal(localMs: number, n: number, unit: Unit): number {
  const local = new Date(localMs);
  const y = local.getUTCFullYear();
  const mo = local.getUTCMonth();
  const d = local.getUTCDate();
  const rest = localMs - Date.UTC(y, mo, d);
  if (unit === "d") return Date.UTC(y, mo, d + n) + rest;
  if (unit === "w") return Date.UTC(y, mo, d + 7 * n) + rest;
  if (unit === "M") return Date.UTC(y, mo + n, d) + rest;
  if (unit === "q") return Date.UTC(y, mo + 3 * n, d) + rest;
  return Date.UTC(y + n, mo, d) + rest;
}

/** `utcMs` plus `n` calendar units in `zone`; a local result keeps the original offset where it can (java.time's plusDays). */
export function addUnits(utcMs: number, n: number, unit: Unit, zone: Zone): number {
  if (unit === "s" || unit === "m" || unit === "h") return utcMs + n * FIXED_UNIT[unit];
  const offset = zone(utcMs);
  return localToUtc(zone, shiftLocal(utcMs + offset, n, unit), offset);
}

/**
 * A fixed interval (`12h`, `90m`) in a time zone, as OpenSearch's TimeIntervalRounding
 * does it: buckets are multiples of the interval in local time; the instant of a local
 * key is the latest one no later than the value, and a key never reaches back over a
 * DST transition (the transition's bucket is then rounded instead).
 */
export function roundFixed(utcMs: number, interval: number, zone: Zone): number {
  const local = utcMs + zone(utcMs);
  const rounded = Math.floor(local / interval) * interval;
  const offsets = validOffsets(zone, rounded);
  if (offsets.length === 0) return previousTransition(zone, rounded - zone(rounded - DAY)) ?? rounded - zone(utcMs);
  const transition = previousTransition(zone, utcMs);
  for (const o of [...offsets].reverse()) {
    const instant = rounded - o;
    if (transition !== undefined && instant < transition) return roundFixed(transition - 1, interval, zone);
    if (instant <= utcMs) return instant;
  }
  return rounded - offsets[0]!;
}

/**
 * The key after `keyMs` of a fixed interval in a zone: the next local multiple, or, in the
 * repeated hour of a DST end (where that local time resolves to an earlier instant), the
 * interval later on the clock, so that keys only ever move forward.
 */
export function nextFixed(keyMs: number, interval: number, zone: Zone): number {
  const next = localToUtc(zone, keyMs + zone(keyMs) + interval);
  return next > keyMs ? next : keyMs + interval;
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

/** 400 Gregorian years, the period of the calendar: a Date out of range is printed shifted by them. */
const ERA_MS = 146_097 * DAY;
const MAX_DATE_MS = 8.64e15;

function printPattern(tokens: Token[], utcMs: number, zone: Zone): string {
  const offset = zone(utcMs);
  let local = utcMs + offset;
  let eras = 0;
  if (Math.abs(local) > MAX_DATE_MS) {
    // Java casts the double to a long first (saturating), then prints that instant exactly.
    const big = local >= 2 ** 63 ? 2n ** 63n - 1n : local <= -(2 ** 63) ? -(2n ** 63n) : BigInt(Math.trunc(local));
    const era = BigInt(ERA_MS);
    eras = Number(big / era);
    local = Number(big % era);
  }
  const d = new Date(local);
  const year = d.getUTCFullYear() + 400 * eras;
  let out = "";
  for (const t of tokens) {
    switch (t.kind) {
      case "literal":
        out += t.text;
        break;
      case "year":
        // java.time writes a year past 9999 with its sign, as ES does for sums of dates.
        out += t.width === 2 ? pad(year % 100, 2) : year > 9999 ? `+${year}` : pad(year, t.width);
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
