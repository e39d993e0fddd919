/**
 * Schedules in the cloud provider's (AWS EventBridge) cron format:
 * `cron(minutes hours day-of-month month day-of-week year)`, evaluated in UTC.
 * cron-parser speaks the Unix dialect (Sunday is 0, no `W`, no year field),
 * so the six AWS fields are evaluated here.
 */

export interface Cron {
  readonly expression: string;
  /** The first fire time strictly after `afterMs`, or undefined when there is none before 2200. */
  next(afterMs: number): number | undefined;
}

const MONTHS = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"];
const DAYS = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

type DayRule = (y: number, m: number, d: number) => boolean;

export class CronError extends Error {}

/** Parses `cron(...)`; throws CronError with the reason a user can act on. */
export function parseCron(text: string): Cron {
  const m = /^cron\((.*)\)$/.exec(text.trim());
  if (!m) throw new CronError("must be cron(<minutes> <hours> <day-of-month> <month> <day-of-week> <year>)");
  const fields = m[1]!.trim().split(/\s+/);
  if (fields.length !== 6) throw new CronError("needs six fields: minutes hours day-of-month month day-of-week year");
  const [min, hour, dom, mon, dow, year] = fields as [string, string, string, string, string, string];
  for (const [name, f] of [
    ["minutes", min],
    ["hours", hour],
  ] as const) {
    if (f.includes("*") || f.includes("?")) throw new CronError(`${name} must have values and cannot be wildcards`);
  }
  if ((dom === "?") === (dow === "?")) throw new CronError("exactly one of day-of-month and day-of-week must be ?");
  const minutes = [...list(min, 0, 59, [], "minutes")].sort((a, b) => a - b);
  const hours = [...list(hour, 0, 23, [], "hours")].sort((a, b) => a - b);
  const months = list(mon, 1, 12, MONTHS, "month");
  const years = list(year, 1970, 2199, [], "year");
  const day = dom !== "?" ? domRule(dom) : dowRule(dow);
  let maxYear = -Infinity;
  for (const y of years) maxYear = Math.max(maxYear, y);
  return {
    expression: text.trim(),
    next(afterMs) {
      const start = Math.floor(afterMs / 60_000) * 60_000 + 60_000;
      const s = new Date(start);
      let y = s.getUTCFullYear();
      let mo = s.getUTCMonth();
      let d = s.getUTCDate();
      while (y <= maxYear) {
        if (!years.has(y)) {
          [y, mo, d] = [y + 1, 0, 1];
          continue;
        }
        if (!months.has(mo + 1)) {
          [mo, d] = [mo + 1, 1];
          if (mo > 11) [y, mo] = [y + 1, 0];
          continue;
        }
        if (day(y, mo, d)) {
          for (const h of hours) {
            for (const mi of minutes) {
              const t = Date.UTC(y, mo, d, h, mi);
              if (t >= start) return t;
            }
          }
        }
        d++;
        if (d > daysIn(y, mo)) {
          [mo, d] = [mo + 1, 1];
          if (mo > 11) [y, mo] = [y + 1, 0];
        }
      }
      return undefined;
    },
  };
}

function daysIn(y: number, m: number): number {
  return new Date(Date.UTC(y, m + 1, 0)).getUTCDate();
}

function weekday(y: number, m: number, d: number): number {
  return new Date(Date.UTC(y, m, d)).getUTCDay();
}

function value(text: string, lo: number, hi: number, names: string[], field: string): number {
  const named = names.indexOf(text.toUpperCase());
  const n = named >= 0 ? named + lo : /^\d+$/.test(text) ? Number(text) : NaN;
  if (!Number.isInteger(n) || n < lo || n > hi) throw new CronError(`${field}: [${text}] is not in ${lo}-${hi}`);
  return n;
}

/** A list of `*`, `a`, `a-b`, with an optional `/step`, comma-separated. */
function list(text: string, lo: number, hi: number, names: string[], field: string): Set<number> {
  const out = new Set<number>();
  for (const item of text.split(",")) {
    const [range, stepText] = item.split("/") as [string, string | undefined];
    const step = stepText === undefined ? 1 : value(stepText, 1, hi, [], field);
    let a: number;
    let b: number;
    if (range === "*") [a, b] = [lo, hi];
    else if (range.includes("-")) {
      const [x, y] = range.split("-") as [string, string];
      [a, b] = [value(x, lo, hi, names, field), value(y, lo, hi, names, field)];
      if (a > b) throw new CronError(`${field}: [${range}] is an empty range`);
    } else {
      a = value(range, lo, hi, names, field);
      b = stepText === undefined ? a : hi;
    }
    for (let v = a; v <= b; v += step) out.add(v);
  }
  return out;
}

/** Day-of-month: a list, `L` (last day), `LW` (last weekday) or `<n>W` (weekday nearest to n). */
function domRule(text: string): DayRule {
  if (text === "L") return (y, m, d) => d === daysIn(y, m);
  if (text === "LW") {
    return (y, m, d) => {
      let last = daysIn(y, m);
      while (weekday(y, m, last) === 0 || weekday(y, m, last) === 6) last--;
      return d === last;
    };
  }
  const w = /^(\d+)W$/.exec(text);
  if (w) {
    const n = value(w[1]!, 1, 31, [], "day-of-month");
    return (y, m, d) => d === nearestWeekday(y, m, n);
  }
  const days = list(text, 1, 31, [], "day-of-month");
  return (_y, _m, d) => days.has(d);
}

function nearestWeekday(y: number, m: number, n: number): number {
  const last = daysIn(y, m);
  const day = Math.min(n, last);
  const wd = weekday(y, m, day);
  if (wd === 6) return day === 1 ? day + 2 : day - 1;
  if (wd === 0) return day === last ? day - 2 : day + 1;
  return day;
}

/** Day-of-week (1 = SUN ... 7 = SAT): a list, `L` (Saturday), `<d>L` (last d of the month), `<d>#<k>` (k-th d). */
function dowRule(text: string): DayRule {
  const dayValue = (t: string): number => value(t, 1, 7, DAYS, "day-of-week") - 1;
  if (text === "L") return (y, m, d) => weekday(y, m, d) === 6;
  const last = /^(\w+)L$/.exec(text);
  if (last) {
    const wd = dayValue(last[1]!);
    return (y, m, d) => weekday(y, m, d) === wd && d + 7 > daysIn(y, m);
  }
  const nth = /^(\w+)#([1-5])$/.exec(text);
  if (nth) {
    const wd = dayValue(nth[1]!);
    const k = Number(nth[2]);
    return (y, m, d) => weekday(y, m, d) === wd && Math.ceil(d / 7) === k;
  }
  const days = new Set([...list(text, 1, 7, DAYS, "day-of-week")].map((v) => v - 1));
  return (y, m, d) => days.has(weekday(y, m, d));
}
