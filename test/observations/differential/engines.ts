/**
 * The two engines of the differential test, answering the same Elasticsearch 5.6
 * request: dms's FIND over its store, and a real OpenSearch 2.19 holding the same
 * documents. OpenSearch 2.x differs from Elasticsearch 5.6 by design in a few
 * request and response shapes; `toOpenSearch` and `fromOpenSearch` translate
 * exactly those, each named after the Elasticsearch breaking-changes note that
 * made it, and record which ones a request needed so the test names them beside
 * the query. Nothing else is translated.
 */
import { ApiError } from "../../../src/errors/index.js";
import { planFind, runFind } from "../../../src/observations/index.js";
// What OpenSearch 2.x reads and answers differently from 5.6: the facts the service translates by.
import { BOUNDS_ADDED, CALENDAR_INTERVALS, EXTENDED_STATS_ADDED } from "../../../src/opensearch/index.js";
import { bulkIndex, openSearchCall } from "../../support/opensearch.js";
import type { ObservationBackend } from "../backends.js";
import { indexMapping, THING_TYPES, type ObservationDoc } from "./data.js";

type Json = Record<string, unknown>;

export interface EngineAnswer {
  status: number;
  body: Json;
}

const isObject = (v: unknown): v is Json => v !== null && typeof v === "object" && !Array.isArray(v);

/**
 * dms: a store of `backend` with the documents (row ids 1..n), searched by FIND over every
 * thing type. `closed`: the days are maintained as closed days are, so that FIND reads
 * them from their column cache wherever a query's fields allow it (on a backend with one).
 */
export async function dmsEngine(
  backend: ObservationBackend,
  docs: readonly ObservationDoc[],
  now: number,
  { closed = false } = {},
) {
  const { store, reader, close } = await backend.open();
  await store.insertBatch(docs.map((document) => ({ document })));
  if (closed) await store.maintain();
  return {
    async search(request: unknown): Promise<EngineAnswer> {
      try {
        return { status: 200, body: await runFind(reader, planFind(request, now), { thingTypes: THING_TYPES }) };
      } catch (err) {
        if (err instanceof ApiError) return { status: err.status, body: { error: err.key, message: err.message } };
        throw err;
      }
    },
    close,
  };
}

export const indexOf = (thingType: string): string => `observations-${thingType}`;
const INDICES = THING_TYPES.map(indexOf).join(",");

/** OpenSearch: one index per thing type (as dms answers `_index`), ids the dms row ids. */
export async function openSearchEngine(url: string, docs: readonly ObservationDoc[], geoFields: readonly string[]) {
  for (const t of THING_TYPES) {
    await openSearchCall(url, "DELETE", `/${indexOf(t)}`);
    const created = await openSearchCall(url, "PUT", `/${indexOf(t)}`, indexMapping(geoFields));
    if (created.status !== 200) throw new Error(`create index: ${JSON.stringify(created.body)}`);
  }
  await bulkIndex(
    url,
    docs.map((d, i) => ({ index: indexOf(d.thingType), id: String(i + 1), source: d })),
  );
  return {
    async search(request: Json): Promise<EngineAnswer> {
      // hits.total as a number and counted exactly: 7.0 made it an object and counts to 10,000 by default.
      const res = await openSearchCall(url, "POST", `/${INDICES}/_search?rest_total_hits_as_int=true`, {
        track_total_hits: true,
        ...request,
      });
      return { status: res.status, body: res.body };
    },
    close: async () => {
      for (const t of THING_TYPES) await openSearchCall(url, "DELETE", `/${indexOf(t)}`);
    },
  };
}

// ---------------------------------------------------------------- translations

/**
 * Request translations, from the Elasticsearch breaking-changes notes:
 * - `interval` → `calendar_interval`/`fixed_interval`: 7.2 deprecated `interval` of
 *   date_histogram (OpenSearch 2.x still reads it, but names `1d` fixed and `day` calendar the
 *   same way; the split is explicit here so the meaning is ES 5.6's: a unit of one is calendar).
 * - `_term` → `_key` in `terms.order`: deprecated 6.0, removed 7.0.
 * - `type` of an `ids` query: mapping types removed (7.0 deprecated, OpenSearch 2.0 removed).
 * - custom date formats: 7.0 replaced Joda with java.time patterns; Joda's `yyyy` (year, which
 *   java.time reads as year-of-era and cannot round up alone) is java's `uuuu`, Joda's `ZZ`
 *   (+01:00) is java's `ZZZZZ`.
 */
export function toOpenSearch(request: Json, applied: Set<string>): Json {
  return walk(request, applied) as Json;
}

function walk(v: unknown, applied: Set<string>, key?: string): unknown {
  if (Array.isArray(v)) return v.map((e) => walk(e, applied, key));
  if (!isObject(v)) return v;
  const out: Json = {};
  for (const [k, e] of Object.entries(v)) out[k] = walk(e, applied, k);
  if (key === "date_histogram" && typeof out.interval === "string") {
    const interval = out.interval;
    delete out.interval;
    if (CALENDAR_INTERVALS.has(interval)) out.calendar_interval = interval;
    else out.fixed_interval = interval;
    applied.add("7.2 date_histogram interval → calendar_interval/fixed_interval");
  }
  if (key !== undefined && typeof out.format === "string" && /yyyy|(?<!Z)ZZ(?!Z)/.test(out.format)) {
    out.format = out.format.replace(/yyyy/g, "uuuu").replace(/(?<!Z)ZZ(?!Z)/g, "ZZZZZ");
    applied.add("7.0 java.time date format");
  }
  if (key === "ids" && "type" in out) {
    delete out.type;
    applied.add("7.0 ids without type");
  }
  if (key === "terms" && out.order !== undefined) {
    const rename = (o: unknown): unknown => {
      if (!isObject(o) || !("_term" in o)) return o;
      applied.add("6.0 terms order _term → _key");
      const { _term, ...rest } = o;
      return { _key: _term, ...rest };
    };
    out.order = Array.isArray(out.order) ? out.order.map(rename) : rename(out.order);
  }
  return out;
}

/**
 * Response translations, from the breaking-changes notes:
 * - `_type` of every hit: types are gone from OpenSearch 2.x (7.0 removed multiple types, 8.0 and
 *   OpenSearch 2.0 the field); dms answers ES 5.6's `_type: "observation"`.
 * - `hits.total` of `top_hits`: an object since 7.0 (`rest_total_hits_as_int` does not reach inside
 *   aggregations), a number in 5.6.
 * - `_shards.skipped`: dms answers 0; OpenSearch may skip shards its pre-filter rules out.
 */
export function fromOpenSearch(body: Json, request: Json): Json {
  const out = fix(body) as Json;
  const hits = out.hits;
  // 7.0 stopped scoring when no hit is asked for (size 0): max_score is null; ES 5.6 wrote 0.0.
  if (request.size === 0 && isObject(hits) && hits.max_score === null) hits.max_score = 0;
  return out;
}

function fix(v: unknown, key?: string): unknown {
  if (Array.isArray(v)) return v.map((e) => fix(e, key === "hits" ? "hit" : undefined));
  if (!isObject(v)) return v;
  const out: Json = {};
  for (const [k, e] of Object.entries(v)) out[k] = fix(e, k);
  if (key === "hit" && "_index" in out && !("_type" in out)) {
    const { _index, ...rest } = out;
    return { _index, _type: "observation", ...rest };
  }
  if (key === "hits" && isObject(out.total)) out.total = out.total.value;
  // 5.6 writes a null sum for stats of no values; later versions write 0.
  if (out.count === 0 && out.sum === 0 && "avg" in out) out.sum = null;
  if ("std_deviation_bounds" in out) for (const f of EXTENDED_STATS_ADDED) delete out[f];
  if (key === "std_deviation_bounds" || key === "std_deviation_bounds_as_string")
    for (const f of BOUNDS_ADDED) delete out[f];
  // 7.? added the number of points to geo_centroid; 5.6 answers the location only.
  if (isObject(out.location) && typeof out.count === "number" && Object.keys(out).length === 2) delete out.count;
  if (key === "_shards") out.skipped = 0;
  // How long each took is no answer to compare.
  if (key === undefined && "took" in out) out.took = 0;
  return out;
}

// ---------------------------------------------------------------- comparison

/** Where two answers differ: a list of `path: dms ≠ opensearch` lines, empty when equal. */
export function differences(dms: unknown, os: unknown, options: { ignore?: RegExp } = {}): string[] {
  const out: string[] = [];
  if (isObject(dms) && "took" in dms) dms = { ...dms, took: 0 };
  diff(dms, os, "", out, options.ignore);
  return out;
}

function diff(a: unknown, b: unknown, path: string, out: string[], ignore: RegExp | undefined): void {
  if (out.length >= 20) return;
  if (ignore?.test(path)) return;
  if (typeof a === "number" && typeof b === "number") {
    if (a === b || sameDouble(a, b)) return;
  } else if (Array.isArray(a) && Array.isArray(b)) {
    if (a.length !== b.length) out.push(`${path}: ${a.length} items ≠ ${b.length} items`);
    for (let i = 0; i < Math.min(a.length, b.length); i++) diff(a[i], b[i], `${path}[${i}]`, out, ignore);
    return;
  } else if (isObject(a) && isObject(b)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    for (const k of keys) {
      const p = path ? `${path}.${k}` : k;
      if (ignore?.test(p)) continue;
      if (!(k in a)) out.push(`${p}: missing in dms (opensearch ${short(b[k])})`);
      else if (!(k in b)) out.push(`${p}: missing in opensearch (dms ${short(a[k])})`);
      else diff(a[k], b[k], p, out, ignore);
    }
    return;
  } else if (a === b) return;
  out.push(`${path}: ${short(a)} ≠ ${short(b)}`);
}

/**
 * Equal as doubles summed in another order: both engines add with floating point, and
 * OpenSearch sums with Kahan compensation, so the last bits of an avg or sum may differ.
 */
function sameDouble(a: number, b: number): boolean {
  return Math.abs(a - b) <= 1e-12 * Math.max(Math.abs(a), Math.abs(b));
}

function short(v: unknown): string {
  const s = JSON.stringify(v);
  return s === undefined ? "undefined" : s.length > 120 ? `${s.slice(0, 120)}…` : s;
}

/** The answer with its hits in `_id` order: for hits that tie, whose order is not defined. */
export function hitsById(body: unknown): unknown {
  const answer = body as { hits: { hits: { _id: string }[] } };
  const hits = [...answer.hits.hits].sort((a, b) => (a._id < b._id ? -1 : a._id > b._id ? 1 : 0));
  return { ...answer, hits: { ...answer.hits, hits } };
}
