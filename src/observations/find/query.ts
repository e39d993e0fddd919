import {
  DEFAULT_DATE_FORMAT,
  UTC,
  parseDateMath,
  parseFormat,
  parseZone,
  type DateFormat,
  type Zone,
} from "./dates.js";
import { badQuery, isObject, numberAt, objectAt, onlyKeys, single, stringAt, type Json } from "./errors.js";
import {
  accessor,
  arcDistance,
  geoAccessor,
  geohashCell,
  isDateField,
  isGeohash,
  parseDistance,
  toGeoPoint,
  toNumber,
  type Doc,
  type GeoPoint,
} from "./fields.js";
import { FIND_LIMITS, overLimit } from "./limits.js";
import { prefixPattern, regexpPattern, wildcardPattern, type Pattern } from "../../patterns/index.js";

/** A compiled query clause: whether a document matches and, if so, its score. */
export interface Matcher {
  test(doc: Doc): boolean;
  score(doc: Doc): number;
  /** What the clause tests, for the column path (`find/vector`); absent where only a document answers it. */
  shape?: ClauseShape;
}

/**
 * A clause as the column path reads it: `value` matches a document when some value at
 * `field` passes `test` (the same test the document path applies to each value).
 */
export type ClauseShape =
  | { kind: "all" }
  | { kind: "none" }
  | { kind: "value"; field: string; test: (v: unknown) => boolean }
  | { kind: "bool"; must: Matcher[]; should: Matcher[]; mustNot: Matcher[]; minShould: number };

/**
 * What the clauses every match must satisfy say about the indexed columns:
 * the store uses it to read only candidate rows.
 */
export interface Pushdown {
  tsFrom: number;
  tsTo: number;
  thingNames?: Set<string>;
  thingTypes?: Set<string>;
  /** The interface requires a `range` on `timestamp` with `gte`. */
  hasTimestampGte: boolean;
}

export interface QueryContext {
  now: number;
  pushdown: Pushdown;
  /** How many clauses enclose this one; bounded so that no request can nest its way to a stack overflow. */
  depth?: number;
}

export function newPushdown(): Pushdown {
  return { tsFrom: -Infinity, tsTo: Infinity, hasTimestampGte: false };
}

export const MATCH_ALL: Matcher = { test: () => true, score: () => 1, shape: { kind: "all" } };

/**
 * Compiles a query clause. `required` is true where every matching document
 * must satisfy the clause (top level, `must`, `filter`), which is where the
 * pushdown may be taken from; `filter` marks filter context (ES 5.6 then
 * requires one `should` of a bool without must/filter... and in filter context, always).
 */
export function compileQuery(q: unknown, outer: QueryContext, required: boolean, filter: boolean): Matcher {
  const depth = (outer.depth ?? 0) + 1;
  if (depth > FIND_LIMITS.queryDepth)
    throw overLimit("query clauses nest too deep", FIND_LIMITS.queryDepth, "indices.query.bool.max_nested_depth");
  const ctx: QueryContext = { ...outer, depth };
  const [kind, body] = single(q, "query");
  switch (kind) {
    case "match_all": {
      const boost = boostOf(objectAt(body, kind), kind, []);
      return boost === 1 ? MATCH_ALL : { test: () => true, score: () => boost, shape: { kind: "all" } };
    }
    case "match_none":
      return { test: () => false, score: () => 0, shape: { kind: "none" } };
    case "bool":
      return compileBool(objectAt(body, kind), ctx, required, filter);
    case "constant_score": {
      const o = objectAt(body, kind);
      onlyKeys(o, ["filter", "boost", "_name"], kind);
      if (o.filter === undefined) throw badQuery("[constant_score] requires [filter]");
      const inner = compileQuery(o.filter, ctx, required, true);
      const boost = o.boost === undefined ? 1 : numberAt(o.boost, "constant_score.boost");
      return { test: inner.test, score: () => boost, shape: inner.shape };
    }
    case "term":
      return compileTerm(body, ctx, required);
    case "terms":
      return compileTerms(body, ctx, required);
    case "range":
      return compileRange(body, ctx, required);
    case "exists": {
      const o = objectAt(body, kind);
      onlyKeys(o, ["field", "boost", "_name"], kind);
      return valueClause(stringAt(o.field, "exists.field"), hasValue, boostOf(o, kind, ["field"]));
    }
    case "prefix":
      return compileStringMatch(kind, body, (p) => prefixPattern(p));
    case "wildcard":
      return compileStringMatch(kind, body, (p, where) => wildcardPattern(p, (why) => badQuery(`[${where}] ${why}`)));
    case "regexp":
      return compileStringMatch(kind, body, (p, where) => regexpPattern(p, (why) => badQuery(`[${where}] ${why}`)), [
        // Lucene's bound on its automaton; RE2 needs none beyond the pattern length.
        "max_determinized_states",
      ]);
    case "match":
      return compileMatch(body, ctx, required);
    case "ids": {
      const o = objectAt(body, kind);
      onlyKeys(o, ["values", "type", "boost", "_name"], kind);
      if (!Array.isArray(o.values)) throw badQuery("[ids] requires [values] as an array");
      if (o.values.length > FIND_LIMITS.terms)
        throw overLimit("[ids.values] holds too many values", FIND_LIMITS.terms, "index.max_terms_count");
      const ids = new Set(o.values.map(String));
      return constant((d) => ids.has(String(d.id)), boostOf(o, kind, ["values", "type"]));
    }
    case "geo_distance":
      return compileGeoDistance(objectAt(body, kind));
    case "geo_bounding_box":
      return compileGeoBox(objectAt(body, kind));
    case "geo_polygon":
      return compileGeoPolygon(objectAt(body, kind));
    default:
      throw badQuery(`unsupported query [${kind}]`);
  }
}

/**
 * Whether a value indexes anything: a scalar does, an array or object (`exists` on an
 * object field) only when some value under it does, as ES's exists query sees the
 * fields below an object.
 */
function hasValue(v: unknown): boolean {
  if (v === null || v === undefined) return false;
  if (Array.isArray(v)) return v.some(hasValue);
  if (typeof v === "object") return Object.values(v).some(hasValue);
  return true;
}

function constant(test: (d: Doc) => boolean, boost: number): Matcher {
  return { test, score: () => boost };
}

/** A clause met by a document when some value of `field` passes `test`. */
function valueClause(field: string, test: (v: unknown) => boolean, boost: number): Matcher {
  const get = accessor(field);
  return { test: (d) => get(d).some(test), score: () => boost, shape: { kind: "value", field, test } };
}

/** A clause the store's read satisfies (pushed down): every candidate matches. */
function pushed(boost: number): Matcher {
  return { test: ALWAYS, score: () => boost, shape: { kind: "all" } };
}

function boostOf(o: Json, where: string, known: string[]): number {
  onlyKeys(o, [...known, "boost", "_name"], where);
  return o.boost === undefined ? 1 : numberAt(o.boost, `${where}.boost`);
}

function clauses(v: unknown, where: string): unknown[] {
  if (v === undefined) return [];
  return Array.isArray(v) ? v : [objectAt(v, where)];
}

function compileBool(o: Json, ctx: QueryContext, required: boolean, filter: boolean): Matcher {
  onlyKeys(
    o,
    ["must", "filter", "should", "must_not", "minimum_should_match", "boost", "disable_coord", "_name"],
    "bool",
  );
  const count = ["must", "filter", "should", "must_not"].reduce((n, k) => n + clauses(o[k], `bool.${k}`).length, 0);
  if (count > FIND_LIMITS.boolClauses)
    throw overLimit("[bool] holds too many clauses", FIND_LIMITS.boolClauses, "indices.query.bool.max_clause_count");
  const must = clauses(o.must, "bool.must").map((c) => compileQuery(c, ctx, required, filter));
  const filt = clauses(o.filter, "bool.filter").map((c) => compileQuery(c, ctx, required, true));
  const should = clauses(o.should, "bool.should").map((c) => compileQuery(c, ctx, false, filter));
  const mustNot = clauses(o.must_not, "bool.must_not").map((c) => compileQuery(c, ctx, false, true));
  const boost = o.boost === undefined ? 1 : numberAt(o.boost, "bool.boost");
  const defaultMin = should.length > 0 && (filter || (must.length === 0 && filt.length === 0)) ? 1 : 0;
  const minShould =
    o.minimum_should_match === undefined ? defaultMin : minimumShouldMatch(o.minimum_should_match, should.length);
  // A single required should clause is a must in disguise: let it narrow the candidates too.
  if (required && should.length === 1 && minShould === 1)
    compileQuery(clauses(o.should, "bool.should")[0], ctx, true, filter);
  const test = (d: Doc): boolean => {
    for (const m of filt) if (!m.test(d)) return false;
    for (const m of must) if (!m.test(d)) return false;
    for (const m of mustNot) if (m.test(d)) return false;
    if (minShould > 0) {
      let n = 0;
      for (const m of should) if (m.test(d) && ++n >= minShould) break;
      if (n < minShould) return false;
    }
    return true;
  };
  // ES 5.6 sums the scores of the scoring clauses; filter and must_not add nothing.
  const score = (d: Doc): number => {
    let s = 0;
    for (const m of must) s += m.score(d);
    for (const m of should) if (m.test(d)) s += m.score(d);
    return s * boost;
  };
  return { test, score, shape: { kind: "bool", must: [...filt, ...must], should, mustNot, minShould } };
}

function minimumShouldMatch(v: unknown, n: number): number {
  let r: number;
  if (typeof v === "number") r = v;
  else if (typeof v === "string" && /^-?\d+%$/.test(v)) {
    const pct = Number(v.slice(0, -1));
    r = pct < 0 ? n - Math.floor((n * -pct) / 100) : Math.floor((n * pct) / 100);
  } else if (typeof v === "string" && /^-?\d+$/.test(v)) r = Number(v);
  else throw badQuery(`[bool.minimum_should_match] value [${String(v)}] is not supported`);
  if (r < 0) r = n + r;
  return Math.max(0, Math.min(n, r));
}

// ---------------------------------------------------------------- term-level

/** `{field: value}` or `{field: {<valueKey>: value, boost}}`. */
function fieldClause(body: unknown, kind: string, valueKeys: string[], extra: string[] = []): [string, unknown, Json] {
  const o = objectAt(body, kind);
  const entries = Object.entries(o).filter(([k]) => k !== "boost" && k !== "_name");
  if (entries.length !== 1) throw badQuery(`[${kind}] must name exactly one field`);
  const [field, spec] = entries[0]!;
  if (isObject(spec)) {
    onlyKeys(spec, [...valueKeys, ...extra, "boost", "_name"], `${kind}.${field}`);
    const key = valueKeys.find((k) => spec[k] !== undefined);
    if (!key) throw badQuery(`[${kind}.${field}] requires [${valueKeys[0]}]`);
    return [field, spec[key], { ...spec, boost: spec.boost ?? o.boost }];
  }
  return [field, spec, { boost: o.boost }];
}

/** An equality test on a field, coercing the query value to the field's kind as ES mapping does. */
function equalsTest(field: string, value: unknown, ctx: QueryContext): (v: unknown) => boolean {
  if (isDateField(field)) {
    const t = parseDateMath(value, DEFAULT_DATE_FORMAT, UTC, ctx.now, false);
    if (t === undefined) throw badQuery(`[${field}] cannot parse date [${String(value)}]`);
    return (v) => toNumber(v) === t;
  }
  if (value === null || typeof value === "object") throw badQuery(`[${field}] value must be a scalar`);
  const asNumber = toNumber(value);
  const asString = String(value);
  return (v) => {
    if (typeof v === "number") return asNumber === v;
    if (typeof v === "boolean") return asString === String(v);
    return String(v) === asString;
  };
}

function compileTerm(body: unknown, ctx: QueryContext, required: boolean): Matcher {
  const [field, value, spec] = fieldClause(body, "term", ["value"]);
  const eq = equalsTest(field, value, ctx);
  const boost = spec.boost === undefined ? 1 : numberAt(spec.boost, "term.boost");
  if (noteTerms(ctx, required, field, [value])) return pushed(boost);
  return valueClause(field, eq, boost);
}

function compileTerms(body: unknown, ctx: QueryContext, required: boolean): Matcher {
  const o = objectAt(body, "terms");
  const entries = Object.entries(o).filter(([k]) => k !== "boost" && k !== "_name");
  if (entries.length !== 1) throw badQuery("[terms] must name exactly one field");
  const [field, values] = entries[0]!;
  if (!Array.isArray(values)) throw badQuery(`[terms.${field}] must be an array (terms lookup is not supported)`);
  if (values.length > FIND_LIMITS.terms)
    throw overLimit(`[terms.${field}] holds too many values`, FIND_LIMITS.terms, "index.max_terms_count");
  const eqs = values.map((v) => equalsTest(field, v, ctx));
  const boost = o.boost === undefined ? 1 : numberAt(o.boost, "terms.boost");
  if (noteTerms(ctx, required, field, values)) return pushed(boost);
  return valueClause(field, (v) => eqs.some((eq) => eq(v)), boost);
}

/**
 * Notes a required term clause on an indexed column. Answers true when the
 * store's candidate rows then satisfy the clause by construction, so the
 * clause need not be tested again per document.
 */
function noteTerms(ctx: QueryContext, required: boolean, field: string, values: unknown[]): boolean {
  if (!required || (field !== "thingName" && field !== "thingType")) return false;
  if (values.some((v) => typeof v !== "string")) return false;
  const set = new Set(values as string[]);
  const key = field === "thingName" ? "thingNames" : "thingTypes";
  const prev = ctx.pushdown[key];
  ctx.pushdown[key] = prev ? new Set([...prev].filter((v) => set.has(v))) : set;
  return true;
}

const ALWAYS = (): boolean => true;

function compileStringMatch(
  kind: string,
  body: unknown,
  make: (p: string, where: string) => Pattern,
  extra: string[] = [],
): Matcher {
  const [field, value, spec] = fieldClause(body, kind, ["value", kind], ["rewrite", ...extra]);
  const where = `${kind}.${field}`;
  const pattern = make(stringAt(value, where), where);
  const boost = spec.boost === undefined ? 1 : numberAt(spec.boost, `${kind}.boost`);
  return valueClause(field, (v) => (typeof v === "string" || typeof v === "number") && pattern.test(String(v)), boost);
}

/** State strings are mapped as keywords, so `match` compares the whole value, as ES does on a keyword field. */
function compileMatch(body: unknown, ctx: QueryContext, required: boolean): Matcher {
  const [field, value, spec] = fieldClause(
    body,
    "match",
    ["query"],
    ["operator", "lenient", "zero_terms_query", "analyzer"],
  );
  const lenient = spec.lenient === true;
  let eq: (v: unknown) => boolean;
  try {
    eq = equalsTest(field, value, ctx);
  } catch (err) {
    if (!lenient) throw err;
    eq = () => false;
  }
  noteTerms(ctx, required, field, [value]);
  return valueClause(field, eq, spec.boost === undefined ? 1 : numberAt(spec.boost, "match.boost"));
}

// ---------------------------------------------------------------- range

function compileRange(body: unknown, ctx: QueryContext, required: boolean): Matcher {
  const o = objectAt(body, "range");
  const entries = Object.entries(o).filter(([k]) => k !== "boost" && k !== "_name");
  if (entries.length !== 1) throw badQuery("[range] must name exactly one field");
  const [field, specRaw] = entries[0]!;
  const spec = objectAt(specRaw, `range.${field}`);
  onlyKeys(
    spec,
    [
      "gte",
      "gt",
      "lte",
      "lt",
      "from",
      "to",
      "include_lower",
      "include_upper",
      "format",
      "time_zone",
      "boost",
      "_name",
      "relation",
    ],
    `range.${field}`,
  );
  const lowerInclusive = spec.gte !== undefined || (spec.gt === undefined && spec.include_lower !== false);
  const upperInclusive = spec.lte !== undefined || (spec.lt === undefined && spec.include_upper !== false);
  const lowerRaw = spec.gte ?? spec.gt ?? spec.from;
  const upperRaw = spec.lte ?? spec.lt ?? spec.to;
  const boost = spec.boost === undefined ? 1 : numberAt(spec.boost, `range.${field}.boost`);
  if (isDateField(field)) {
    const { min, max } = dateRangeBounds(field, spec, ctx.now);
    if (required && field === "timestamp") {
      ctx.pushdown.tsFrom = Math.max(ctx.pushdown.tsFrom, min);
      ctx.pushdown.tsTo = Math.min(ctx.pushdown.tsTo, max);
      if (spec.gte !== undefined) ctx.pushdown.hasTimestampGte = true;
      // The ts column is the document's timestamp: every candidate row is inside this range.
      return pushed(boost);
    }
    return valueClause(field, (v) => typeof v === "number" && v >= min && v <= max, boost);
  }
  checkFormatAndZone(field, spec);
  const cmp = (bound: unknown): ((v: unknown) => number | undefined) => {
    const n = toNumber(bound);
    if (n !== undefined) return (v) => (typeof v === "number" ? v - n : typeof v === "string" ? undefined : undefined);
    const s = String(bound);
    return (v) => (typeof v === "string" ? (v < s ? -1 : v > s ? 1 : 0) : undefined);
  };
  const lo = lowerRaw === undefined || lowerRaw === null ? undefined : cmp(lowerRaw);
  const hi = upperRaw === undefined || upperRaw === null ? undefined : cmp(upperRaw);
  const inRange = (v: unknown): boolean => {
    if (lo) {
      const c = lo(v);
      if (c === undefined || c < 0 || (c === 0 && !lowerInclusive)) return false;
    }
    if (hi) {
      const c = hi(v);
      if (c === undefined || c > 0 || (c === 0 && !upperInclusive)) return false;
    }
    return true;
  };
  return valueClause(field, inRange, boost);
}

/** A range's `format` and `time_zone`, refused when not understood (a range on any field names them). */
function checkFormatAndZone(field: string, spec: Json): { format: DateFormat | undefined; zone: Zone } {
  const format = spec.format === undefined ? undefined : parseFormat(stringAt(spec.format, "range.format"));
  if (spec.format !== undefined && !format)
    throw badQuery(`[range.${field}.format] [${String(spec.format)}] is not supported`);
  const zone = spec.time_zone === undefined ? UTC : parseZone(stringAt(spec.time_zone, "range.time_zone"));
  if (!zone) throw badQuery(`[range.${field}.time_zone] [${String(spec.time_zone)}] is not known`);
  return { format, zone };
}

/**
 * The epoch milliseconds a `range` on a date field spans, both ends included (-Infinity and
 * Infinity where it is open), as ES 5.6 reads the bounds: in their `format` and `time_zone`, date
 * math from `now`, rounding up for `gt` and `lte` and down for `gte` and `lt`.
 */
export function dateRangeBounds(field: string, spec: Json, now: number): { min: number; max: number } {
  const lowerInclusive = spec.gte !== undefined || (spec.gt === undefined && spec.include_lower !== false);
  const upperInclusive = spec.lte !== undefined || (spec.lt === undefined && spec.include_upper !== false);
  const { format, zone } = checkFormatAndZone(field, spec);
  const fmt: DateFormat = format ?? DEFAULT_DATE_FORMAT;
  const bound = (v: unknown, roundUp: boolean): number | undefined => {
    if (v === undefined || v === null) return undefined;
    const t = parseDateMath(v, fmt, zone, now, roundUp);
    if (t === undefined) throw badQuery(`[range.${field}] cannot parse date [${String(v)}]`);
    return t;
  };
  const lo = bound(spec.gte ?? spec.gt ?? spec.from, !lowerInclusive);
  const hi = bound(spec.lte ?? spec.lt ?? spec.to, upperInclusive);
  return {
    min: lo === undefined ? -Infinity : lowerInclusive ? lo : lo + 1,
    max: hi === undefined ? Infinity : upperInclusive ? hi : hi - 1,
  };
}

// ---------------------------------------------------------------- geo

const GEO_KEYS = [
  "boost",
  "_name",
  "validation_method",
  "ignore_malformed",
  "coerce",
  "type",
  "distance_type",
  "optimize_bbox",
  "unit",
];

function geoField(o: Json, kind: string, known: string[]): [string, unknown] {
  const entries = Object.entries(o).filter(([k]) => ![...GEO_KEYS, ...known].includes(k));
  if (entries.length !== 1) throw badQuery(`[${kind}] must name exactly one geo_point field`);
  return entries[0]!;
}

function point(v: unknown, where: string): GeoPoint {
  const p = toGeoPoint(v);
  if (!p) throw badQuery(`[${where}] is not a geo_point`);
  return p;
}

function compileGeoDistance(o: Json): Matcher {
  const [field, center] = geoField(o, "geo_distance", ["distance"]);
  const c = point(center, `geo_distance.${field}`);
  const unit = typeof o.unit === "string" ? o.unit : "m";
  const max = parseDistance(o.distance, unit);
  if (max === undefined) throw badQuery("[geo_distance.distance] is missing or not a distance");
  const get = geoAccessor(field);
  return constant((d) => get(d).some((p) => arcDistance(c, p) <= max), boostOf({ boost: o.boost }, "geo_distance", []));
}

function compileGeoBox(o: Json): Matcher {
  const [field, boxRaw] = geoField(o, "geo_bounding_box", []);
  const box = objectAt(boxRaw, `geo_bounding_box.${field}`);
  let top: number, left: number, bottom: number, right: number;
  // A corner given as a geohash is its cell's corner on that side, so that a cell is its own box.
  const corner = (v: unknown, where: string, vertical: "top" | "bottom", side: "left" | "right"): GeoPoint => {
    if (!isGeohash(v)) return point(v, where);
    const cell = geohashCell(v);
    return { lat: cell[vertical], lon: cell[side] };
  };
  if (box.top_left !== undefined || box.bottom_right !== undefined) {
    const tl = corner(box.top_left, "geo_bounding_box.top_left", "top", "left");
    const br = corner(box.bottom_right, "geo_bounding_box.bottom_right", "bottom", "right");
    [top, left, bottom, right] = [tl.lat, tl.lon, br.lat, br.lon];
  } else if (box.top_right !== undefined || box.bottom_left !== undefined) {
    const tr = corner(box.top_right, "geo_bounding_box.top_right", "top", "right");
    const bl = corner(box.bottom_left, "geo_bounding_box.bottom_left", "bottom", "left");
    [top, left, bottom, right] = [tr.lat, bl.lon, bl.lat, tr.lon];
  } else {
    top = numberAt(box.top, "geo_bounding_box.top");
    left = numberAt(box.left, "geo_bounding_box.left");
    bottom = numberAt(box.bottom, "geo_bounding_box.bottom");
    right = numberAt(box.right, "geo_bounding_box.right");
  }
  const get = geoAccessor(field);
  // A box whose left is east of its right crosses the date line.
  const inLon =
    left <= right ? (lon: number) => lon >= left && lon <= right : (lon: number) => lon >= left || lon <= right;
  return constant(
    (d) => get(d).some((p) => p.lat <= top && p.lat >= bottom && inLon(p.lon)),
    boostOf({ boost: o.boost }, "geo_bounding_box", []),
  );
}

function compileGeoPolygon(o: Json): Matcher {
  const [field, specRaw] = geoField(o, "geo_polygon", []);
  const spec = objectAt(specRaw, `geo_polygon.${field}`);
  if (!Array.isArray(spec.points) || spec.points.length < 3)
    throw badQuery("[geo_polygon.points] needs at least 3 points");
  const pts = spec.points.map((p, i) => point(p, `geo_polygon.points[${i}]`));
  const get = geoAccessor(field);
  const inside = (p: GeoPoint): boolean => {
    let odd = false;
    for (let i = 0, j = pts.length - 1; i < pts.length; j = i++) {
      const a = pts[i]!;
      const b = pts[j]!;
      if (a.lat > p.lat !== b.lat > p.lat && p.lon < ((b.lon - a.lon) * (p.lat - a.lat)) / (b.lat - a.lat) + a.lon)
        odd = !odd;
    }
    return odd;
  };
  return constant((d) => get(d).some(inside), boostOf({ boost: o.boost }, "geo_polygon", []));
}
