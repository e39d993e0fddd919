import { randomUUID } from "node:crypto";
import { badQuery, isObject, objectAt, stringAt } from "./errors.js";
import { accessor, toNumber, type Accessor, type Doc } from "./fields.js";
import { wildcardPattern, type Pattern } from "../../patterns/index.js";

/** One sort key of a request, compiled. `_score` and `_doc` are the ES pseudo-fields. */
export interface SortKey {
  field: string;
  /** The type the searched thing types declare for the field, when they agree on one. */
  declared: string | undefined;
  desc: boolean;
  missingFirst: boolean;
  mode: "min" | "max" | "avg" | "sum" | undefined;
  get: Accessor | undefined;
}

export interface Sorter {
  keys: SortKey[];
  byScore: boolean;
  /** A `_score` key anywhere makes ES compute scores, as track_scores does. */
  tracksScores: boolean;
  compare(a: Doc, b: Doc): number;
  values(doc: Doc): unknown[];
}

/**
 * The data type each document field has by declaration (`state.<resource>` of the searched
 * thing types), where every type that declares the resource gives it the same one.
 */
export type FieldTypes = Readonly<Record<string, string>>;

export function declaredFieldTypes(
  types: readonly { resources: readonly { name: string; dataType: string }[] }[],
): FieldTypes {
  const declared = new Map<string, string | undefined>();
  for (const t of types) {
    for (const r of t.resources) {
      const field = `state.${r.name}`;
      // Types that disagree leave the field to be judged by its values, as an undeclared one is.
      declared.set(field, declared.has(field) && declared.get(field) !== r.dataType ? undefined : r.dataType);
    }
  }
  return Object.fromEntries([...declared].filter((e): e is [string, string] => e[1] !== undefined));
}

/** `sort` as ES 5.6 takes it: a string, an object, or an array of either. */
export function compileSort(spec: unknown, fieldTypes: FieldTypes = {}): Sorter | undefined {
  if (spec === undefined) return undefined;
  const items = Array.isArray(spec) ? spec : [spec];
  const keys = items.map((item) => {
    const key = sortKey(item);
    key.declared = Object.hasOwn(fieldTypes, key.field) ? fieldTypes[key.field] : undefined;
    return key;
  });
  const byScore = keys.length === 1 && keys[0]!.field === "_score" && keys[0]!.desc;
  const valueOf = (k: SortKey, d: Doc): number | string | null => {
    if (k.field === "_score") return d.score;
    if (k.field === "_doc") return d.id;
    const vs = k.get!(d).filter((v) => typeof v === "number" || typeof v === "string" || typeof v === "boolean");
    if (vs.length === 0) return null;
    if (vs.length === 1) return norm(vs[0]);
    const nums = vs.map(toNumber).filter((n): n is number => n !== undefined);
    if (nums.length === vs.length) {
      const mode = k.mode ?? (k.desc ? "max" : "min");
      if (mode === "min") return nums.reduce((m, n) => Math.min(m, n), Infinity);
      if (mode === "max") return nums.reduce((m, n) => Math.max(m, n), -Infinity);
      const sum = nums.reduce((s, n) => s + n, 0);
      return mode === "sum" ? sum : sum / nums.length;
    }
    const strs = vs.map(String).sort();
    return k.desc ? strs[strs.length - 1]! : strs[0]!;
  };
  const compare = (a: Doc, b: Doc): number => {
    for (const k of keys) {
      const va = valueOf(k, a);
      const vb = valueOf(k, b);
      if (va === vb) continue;
      if (va === null) return k.missingFirst ? -1 : 1;
      if (vb === null) return k.missingFirst ? 1 : -1;
      const c = va < vb ? -1 : 1;
      return k.desc ? -c : c;
    }
    return a.id - b.id;
  };
  return {
    keys,
    byScore,
    tracksScores: keys.some((k) => k.field === "_score"),
    compare,
    values: (d) => keys.map((k) => valueOf(k, d)),
  };
}

/** Declared types ES sorts as a long (a date is its epoch milliseconds). */
const LONG_SORTED = new Set(["long", "date"]);
const LONG_MAX = 9223372036854775807n;
const LONG_MIN = -9223372036854775808n;

/**
 * The sort values of a page as ES writes them: a document without a value for a numeric
 * field shows the sentinel it sorted by, the highest value of the field's sort type
 * ascending and the lowest descending (the other way round with `missing: _first`): for a
 * field declared `long` or `date` Long.MAX_VALUE and MIN_VALUE (bigints, written whole by
 * findJson), for a boolean field Integer.MAX_VALUE and MIN_VALUE, for any other numeric
 * field the doubles Infinity and -Infinity, which ES's JSON writes as the strings
 * "Infinity" and "-Infinity"; a keyword field shows null.
 */
export function sortValuesOf(sorter: Sorter, page: Doc[], matches: Doc[]): unknown[][] {
  const rows = page.map((d) => sorter.values(d));
  sorter.keys.forEach((k, i) => {
    if (!rows.some((r) => r[i] === null)) return;
    const sentinel = missingSentinel(k, matches);
    if (sentinel === null) return;
    for (const r of rows) if (r[i] === null) r[i] = sentinel;
  });
  return rows;
}

/** What a document without the key's field sorts by (null: a keyword field, which shows none). */
function missingSentinel(k: SortKey, matches: Doc[]): bigint | number | string | null {
  const high = k.desc === k.missingFirst;
  if (k.declared !== undefined && LONG_SORTED.has(k.declared)) return high ? LONG_MAX : LONG_MIN;
  if (k.declared === "double") return high ? "Infinity" : "-Infinity";
  const numeric = matches.some((d) => k.get!(d).some((v) => typeof v === "number" || typeof v === "boolean"));
  if (!numeric) return null;
  // A boolean field sorts as an int: its sentinels are Integer.MAX_VALUE and MIN_VALUE.
  const booleans = matches.some((d) => k.get!(d).some((v) => typeof v === "boolean"));
  if (booleans) return high ? 2147483647 : -2147483648;
  return high ? "Infinity" : "-Infinity";
}

/**
 * An answer as JSON text; a bigint in it (a long sort sentinel) is written as its whole
 * number, which JSON.stringify refuses and a double cannot hold. The usual answer has
 * none and costs one JSON.stringify.
 */
export function findJson(answer: unknown): string {
  try {
    return JSON.stringify(answer);
  } catch (err) {
    if (!(err instanceof TypeError) || !/BigInt/i.test(err.message)) throw err;
  }
  // A mark no document can hold: its id is made for this answer, never seen by its data.
  const id = randomUUID();
  const text = JSON.stringify(answer, (_key, value: unknown) =>
    typeof value === "bigint" ? `bigint-${id}:${value}` : value,
  );
  return text.replace(/"bigint-([0-9a-f-]{36}):(-?\d+)"/g, (all: string, mark: string, digits: string) =>
    mark === id ? digits : all,
  );
}

function norm(v: unknown): number | string {
  if (typeof v === "boolean") return v ? 1 : 0;
  return v as number | string;
}

function sortKey(item: unknown): SortKey {
  if (typeof item === "string") return make(item, item === "_score" ? "desc" : "asc", undefined);
  const o = objectAt(item, "sort");
  const entries = Object.entries(o);
  if (entries.length !== 1) throw badQuery("[sort] each entry must name one field");
  const [field, spec] = entries[0]!;
  if (typeof spec === "string") return make(field, spec, undefined);
  if (!isObject(spec)) throw badQuery(`[sort.${field}] must be a string or an object`);
  for (const k of Object.keys(spec)) {
    if (!["order", "missing", "mode", "unmapped_type"].includes(k))
      throw badQuery(`[sort.${field}] does not support [${k}]`);
  }
  const order = spec.order === undefined ? (field === "_score" ? "desc" : "asc") : stringAt(spec.order, "sort.order");
  const key = make(field, order, spec.mode);
  if (spec.missing !== undefined) {
    if (spec.missing !== "_first" && spec.missing !== "_last") throw badQuery("[sort.missing] must be _first or _last");
    key.missingFirst = spec.missing === "_first";
  }
  return key;
}

function make(field: string, order: string, mode: unknown): SortKey {
  if (order !== "asc" && order !== "desc") throw badQuery(`[sort.${field}.order] must be asc or desc`);
  if (mode !== undefined && !["min", "max", "avg", "sum"].includes(String(mode)))
    throw badQuery(`[sort.${field}.mode] is not supported`);
  return {
    field,
    declared: undefined,
    desc: order === "desc",
    missingFirst: false,
    mode: mode as SortKey["mode"],
    get: field === "_score" || field === "_doc" ? undefined : accessor(field),
  };
}

/** `_source` filtering: false, a pattern, a list, or `{includes, excludes}` with `*` wildcards. */
export function compileSource(spec: unknown): (src: Record<string, unknown>) => Record<string, unknown> | undefined {
  if (spec === undefined || spec === true) return (s) => s;
  if (spec === false) return () => undefined;
  let includes: string[];
  let excludes: string[] = [];
  if (typeof spec === "string") includes = [spec];
  else if (Array.isArray(spec)) includes = spec.map((s) => stringAt(s, "_source"));
  else if (isObject(spec)) {
    const list = (v: unknown): string[] =>
      v === undefined ? [] : Array.isArray(v) ? v.map((s) => stringAt(s, "_source")) : [stringAt(v, "_source")];
    includes = list(spec.includes ?? spec.include);
    excludes = list(spec.excludes ?? spec.exclude);
  } else throw badQuery("[_source] must be a boolean, string, array or object");
  if (includes.length === 0 && excludes.length === 0) return (s) => s;
  const toRe = (p: string): Pattern => wildcardPattern(p, (why) => badQuery(`[_source] [${p}] ${why}`), false);
  const inc = includes.map(toRe);
  const exc = excludes.map(toRe);
  const isIncluded = (path: string): boolean => inc.length === 0 || inc.some((r) => r.test(path));
  const isExcluded = (path: string): boolean => exc.some((r) => r.test(path));
  /**
   * ES's XContentMapValues.filter: a key whose path an exclude matches is dropped; one an
   * include matches is kept with everything below it (less the excludes); any other object
   * is kept only if something below it is. Arrays are transparent: each element is filtered
   * at the array's path, so a pattern such as `parts.type` reaches inside arrays of objects.
   */
  const filterMap = (obj: Record<string, unknown>, prefix: string, all: boolean): Record<string, unknown> => {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(obj)) {
      const path = prefix ? `${prefix}.${k}` : k;
      if (isExcluded(path)) continue;
      const included = all || isIncluded(path);
      if (isObject(v)) {
        const sub = filterMap(v, path, included);
        if (included || Object.keys(sub).length > 0) out[k] = sub;
      } else if (Array.isArray(v)) {
        const sub = filterList(v, path, included);
        if (sub.length > 0) out[k] = sub;
      } else if (included) out[k] = v;
    }
    return out;
  };
  const filterList = (list: unknown[], path: string, all: boolean): unknown[] => {
    const out: unknown[] = [];
    for (const v of list) {
      if (isObject(v)) {
        const sub = filterMap(v, path, all);
        if (Object.keys(sub).length > 0) out.push(sub);
      } else if (Array.isArray(v)) {
        const sub = filterList(v, path, all);
        if (sub.length > 0) out.push(sub);
      } else if (all) out.push(v);
    }
    return out;
  };
  return (s) => filterMap(s, "", false);
}

/** A hit as ES 5.6 writes it. */
export function hitOf(
  doc: Doc,
  score: number | null,
  source: (s: Record<string, unknown>) => Record<string, unknown> | undefined,
  sortValues: unknown[] | undefined,
): Record<string, unknown> {
  const hit: Record<string, unknown> = doc.hit
    ? { _index: doc.hit.index, _type: doc.hit.type, _id: doc.hit.id, _score: score }
    : { _index: indexName(doc.thingType), _type: "observation", _id: String(doc.id), _score: score };
  const src = source(doc.source);
  if (src !== undefined) hit._source = src;
  if (sortValues) hit.sort = sortValues;
  return hit;
}

/** One index per thing type, which is what `queryScope.thingTypes` limits. */
export function indexName(thingType: string): string {
  return `observations-${thingType}`;
}
