/**
 * How observations are laid out in OpenSearch: one series of time-based indices per thing type,
 * `<prefix>-<thing type>-<period>`, each of one shard. A thing type's indices carry its own
 * mapping (its resources' declared types), a FIND over some thing types searches theirs only, and
 * a window within one period holds each thing type in one shard, as the embedded evaluator
 * answers (one shard per thing type; docs/opensearch.md).
 */

export type IndexPeriod = "day" | "month" | "year";

export interface IndexLayout {
  prefix: string;
  period: IndexPeriod;
}

/**
 * A thing type id as the part of an index name: index names are lower case and may not hold
 * `\ / * ? " < > | , #` or spaces, and the part must hold no `-` (so that `<prefix>-<type>-*`
 * matches one thing type's indices only). Lower-case letters, digits and `.` stay; any other
 * character is `_<hex code>_` (`_` itself included), so the part reads back unambiguously.
 */
export function typePart(thingType: string): string {
  let out = "";
  for (const ch of thingType) {
    out += /[a-z0-9.]/.test(ch) ? ch : `_${ch.codePointAt(0)!.toString(16)}_`;
  }
  return out;
}

/** The thing type a `typePart` stands for, or undefined when it is not one. */
export function thingTypeOfPart(part: string): string | undefined {
  let out = "";
  for (let i = 0; i < part.length;) {
    const ch = part[i]!;
    if (ch !== "_") {
      if (!/[a-z0-9.]/.test(ch)) return undefined;
      out += ch;
      i++;
      continue;
    }
    const end = part.indexOf("_", i + 1);
    if (end < 0) return undefined;
    const code = Number.parseInt(part.slice(i + 1, end), 16);
    if (!Number.isFinite(code) || code < 0 || code > 0x10ffff) return undefined;
    out += String.fromCodePoint(code);
    i = end + 1;
  }
  return out;
}

/** The period's part of an index name, in UTC: `2026.10.25`, `2026.10` or `2026`. */
export function periodPart(period: IndexPeriod, ts: number): string {
  const d = new Date(ts);
  const year = String(d.getUTCFullYear()).padStart(4, "0");
  if (period === "year") return year;
  const month = `${year}.${String(d.getUTCMonth() + 1).padStart(2, "0")}`;
  if (period === "month") return month;
  return `${month}.${String(d.getUTCDate()).padStart(2, "0")}`;
}

/** The index an observation of `thingType` at `ts` goes to. */
export function indexOf(layout: IndexLayout, thingType: string, ts: number): string {
  return `${layout.prefix}-${typePart(thingType)}-${periodPart(layout.period, ts)}`;
}

/** Every index of one thing type. */
export function typePattern(layout: IndexLayout, thingType: string): string {
  return `${layout.prefix}-${typePart(thingType)}-*`;
}

/** Every index of the layout. */
export function allPattern(layout: IndexLayout): string {
  return `${layout.prefix}-*`;
}

/** The name of the index template of one thing type's indices. */
export function templateName(layout: IndexLayout, thingType: string): string {
  return `${layout.prefix}-${typePart(thingType)}`;
}

/** What an index name of the layout says: its thing type and the time it holds, [from, to). */
export interface IndexInfo {
  thingType: string;
  from: number;
  to: number;
}

/** Reads an index name of the layout back; undefined for any other name. */
export function parseIndex(layout: IndexLayout, index: string): IndexInfo | undefined {
  const head = `${layout.prefix}-`;
  if (!index.startsWith(head)) return undefined;
  const rest = index.slice(head.length);
  const dash = rest.lastIndexOf("-");
  if (dash <= 0) return undefined;
  const thingType = thingTypeOfPart(rest.slice(0, dash));
  const span = periodSpan(layout.period, rest.slice(dash + 1));
  if (thingType === undefined || span === undefined) return undefined;
  return { thingType, ...span };
}

function periodSpan(period: IndexPeriod, text: string): { from: number; to: number } | undefined {
  const shapes: Record<IndexPeriod, RegExp> = {
    day: /^(\d{4,})\.(\d{2})\.(\d{2})$/,
    month: /^(\d{4,})\.(\d{2})$/,
    year: /^(\d{4,})$/,
  };
  const m = shapes[period].exec(text);
  if (!m) return undefined;
  const year = Number(m[1]);
  const month = m[2] === undefined ? 0 : Number(m[2]) - 1;
  const day = m[3] === undefined ? 1 : Number(m[3]);
  const from = Date.UTC(year, month, day);
  const to =
    period === "day"
      ? Date.UTC(year, month, day + 1)
      : period === "month"
        ? Date.UTC(year, month + 1, 1)
        : Date.UTC(year + 1, 0, 1);
  return { from, to };
}

/** `observations-<thingType>`: the index name FIND answers in `_index`, as the embedded evaluator does. */
export function answeredIndex(thingType: string): string {
  return `observations-${thingType}`;
}
