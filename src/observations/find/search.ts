import { required } from "../../errors/index.js";
import type { ObservationReader } from "../reader.js";
import { compileAggs, type Agg, type AggContext } from "./aggs/index.js";
import { badQuery, intAt, isObject, type Json } from "./errors.js";
import { notingFields, type Doc, type FieldUse } from "./fields.js";
import { compileSort, compileSource, hitOf, sortValuesOf, type FieldTypes, type Sorter } from "./hits.js";
import { FIND_LIMITS, QueryBudget, checkJsonDepth, overLimit, tooManyMatches, type TimeBudget } from "./limits.js";
import { MATCH_ALL, compileQuery, newPushdown, type Matcher, type Pushdown } from "./query.js";
import { NotFromColumns, answersFromColumns, runFromColumns, type Found } from "./vector/index.js";

/** The request keys FIND understands; anything else is refused by name. */
const REQUEST_KEYS = ["query", "aggs", "aggregations", "size", "from", "sort", "_source", "track_scores", "timeout"];
/**
 * Observations one FIND may match. Candidates stream through the query one at a
 * time (a query may read any number of them within its time budget), but every
 * match is held while the aggregations and the sort of the hits run: this bounds
 * a query's memory. A match holds only the fields the request reads (some 200
 * bytes for a dashboard's two or three), its whole document when `top_hits` answers it.
 */
export const MAX_MATCHES = 3_000_000;

/** A FIND request planned once: what to read, how to test, what to answer. */
export interface FindPlan {
  pushdown: Pushdown;
  matcher: Matcher;
  aggs: Agg[];
  /** What the aggregations see of the search: its shards are known only when it runs. */
  aggContext: AggContext;
  size: number;
  from: number;
  sorter: Sorter | undefined;
  trackScores: boolean;
  source: (s: Record<string, unknown>) => Record<string, unknown> | undefined;
  /** Counts buckets and time while the plan runs. */
  budget: QueryBudget;
  /** The document fields the query, aggregations and sort read: all a match needs to keep. */
  fields: FieldUse;
  /** Whether the plan has a column form (find/vector): closed days then answer without a document per row. */
  fromColumns: boolean;
}

/**
 * Parses the `query` property of a FIND body (an ES 5.6 search request) into
 * a plan, enforcing the interface's requirements: a `range` on `timestamp`
 * with `gte` that every hit must satisfy, and no `global` aggregation.
 * `requireTimestamp: false` plans a search of documents that have no
 * timestamp (things), where a missing query matches all, as in ES.
 */
export function planFind(
  request: unknown,
  now: number,
  { requireTimestamp = true, fieldTypes = {} }: { requireTimestamp?: boolean; fieldTypes?: FieldTypes } = {},
): FindPlan {
  if (request === undefined || request === null) throw required("query");
  if (!isObject(request)) throw badQuery("must be an object");
  for (const k of Object.keys(request)) if (!REQUEST_KEYS.includes(k)) throw badQuery(`unsupported request key [${k}]`);
  if (request.aggs !== undefined && request.aggregations !== undefined)
    throw badQuery("give [aggs] or [aggregations], not both");
  if (request.query === undefined && requireTimestamp)
    throw badQuery("a [range] on [timestamp] with [gte] is required");
  const pushdown = newPushdown();
  const budget = new QueryBudget();
  const aggContext: AggContext = { now, budget, search: { shards: 1 }, fieldTypes };
  const [[matcher, aggs, sorter], fields] = notingFields(() => {
    const matcher =
      request.query === undefined ? MATCH_ALL : compileQuery(request.query, { now, pushdown }, true, false);
    if (requireTimestamp && !pushdown.hasTimestampGte)
      throw badQuery("a [range] on [timestamp] with [gte] is required in a must or filter clause");
    return [
      matcher,
      compileAggs(request.aggs ?? request.aggregations, aggContext),
      compileSort(request.sort, fieldTypes),
    ] as const;
  });
  const size = request.size === undefined ? 10 : intAt(request.size, "size");
  const from = request.from === undefined ? 0 : intAt(request.from, "from");
  if (from + size > FIND_LIMITS.resultWindow)
    throw overLimit("[from] + [size] is too large", FIND_LIMITS.resultWindow, "index.max_result_window");
  if (request.track_scores !== undefined && typeof request.track_scores !== "boolean")
    throw badQuery("[track_scores] must be a boolean");
  // Last: the clauses above refuse deep nesting by name; this catches it where nothing is compiled (`meta`).
  checkJsonDepth(request, FIND_LIMITS.jsonDepth);
  const trackScores = request.track_scores === true;
  return {
    fromColumns: answersFromColumns({ matcher, aggs, size, from, sorter, trackScores, fields }),
    budget,
    pushdown,
    matcher,
    aggs,
    aggContext,
    size,
    from,
    sorter,
    fields,
    trackScores,
    source: compileSource(request._source),
  };
}

export interface FindScope {
  /** Thing types whose observations the caller may read, already limited by `queryScope.thingTypes`. */
  thingTypes: readonly string[];
}

/**
 * Runs a plan over the store and answers exactly as Elasticsearch 5.6 does:
 * the candidates stream through the query, the matches are kept (at most
 * `maxMatches`, cut down to the fields the request reads) for the aggregations
 * and the hits, whose documents are read whole again for the page only.
 * With a time budget, a run that takes longer stops with INVALID_ARGUMENTS.
 */
export async function runFind(
  reader: ObservationReader,
  plan: FindPlan,
  scope: FindScope,
  maxMatches = MAX_MATCHES,
  time?: TimeBudget,
): Promise<Json> {
  const started = performance.now();
  const budget = plan.budget;
  budget.start(time, started);
  const p = plan.pushdown;
  const types = p.thingTypes ? scope.thingTypes.filter((t) => p.thingTypes!.has(t)) : scope.thingTypes;
  const matches: Doc[] = [];
  const empty = types.length === 0 || p.tsFrom > p.tsTo || (p.thingNames !== undefined && p.thingNames.size === 0);
  const shards = scope.thingTypes.length;
  if (empty) return answer(allOf(matches), plan, shards, started, []);
  const m = plan.matcher;
  const paths = plan.fields.wholeSource ? undefined : plan.fields.paths;
  // A `__proto__` key cannot be copied as data: such a request keeps whole documents.
  const cut = paths && ![...paths].some((p) => p.includes("__proto__")) ? sourceCutter(paths) : undefined;
  const keep = (doc: Doc): void => {
    if (!m.test(doc)) return;
    doc.score = m.score(doc);
    if (matches.length === maxMatches) throw tooManyMatches(maxMatches);
    if (cut) doc.source = cut(doc.source);
    matches.push(doc);
  };
  const filter = {
    tsFrom: p.tsFrom,
    tsTo: p.tsTo,
    thingTypes: types,
    thingNames: p.thingNames ? [...p.thingNames] : undefined,
  };
  if (plan.fromColumns && paths && cut) {
    try {
      const fromColumns = runFromColumns(
        reader,
        plan,
        filter,
        paths,
        maxMatches,
        () => budget.tick(),
        (found, documents) => {
          const page = pageOf(found.page, plan);
          return answer(found, plan, shards, started, page, documents(page.map((d) => d.id)));
        },
      );
      if (fromColumns !== undefined) return fromColumns;
    } catch (err) {
      if (!(err instanceof NotFromColumns)) throw err;
      // The documents answer it after all (a path of mixed kinds): the count of buckets starts again.
      budget.start(time, started);
    }
  }
  let page: Doc[] = [];
  const whole = await reader.scan(
    filter,
    {
      paths,
      tick: () => budget.tick(),
      remainingMs: () => budget.remainingMs(),
      row: (id, thingType, json) => {
        budget.tick();
        keep({ id, thingType, source: JSON.parse(json) as Record<string, unknown>, score: 0 });
      },
      projected: (id, thingType, source) => {
        budget.tick();
        keep({ id, thingType, source, score: 0 });
      },
    },
    () => {
      page = pageOf(matches, plan);
      // Matches cut down to the request's paths: the page's hits are read whole again.
      return paths ? page.map((d) => d.id) : [];
    },
  );
  return answer(allOf(matches), plan, shards, started, page, paths ? whole : undefined);
}

/**
 * A match cut down to what the request reads of it, exactly: the top-level keys
 * its paths start with, and of a plain object under such a key only the keys its
 * paths go on with, each whole. Every read of the request follows one of the
 * paths, so it finds in the cut document what it finds in the whole one.
 */
function sourceCutter(paths: ReadonlySet<string>): (source: Record<string, unknown>) => Record<string, unknown> {
  /** Per top-level key, the second keys read below it, or undefined where the key itself is read. */
  const tree = new Map<string, Set<string> | undefined>();
  for (const path of paths) {
    const dot = path.indexOf(".");
    const top = dot === -1 ? path : path.slice(0, dot);
    if (dot === -1) {
      tree.set(top, undefined);
      continue;
    }
    const next = path.slice(dot + 1).split(".")[0]!;
    if (!tree.has(top)) tree.set(top, new Set([next]));
    else tree.get(top)?.add(next);
  }
  const plan = [...tree];
  return (source) => {
    const out: Record<string, unknown> = {};
    for (const [top, below] of plan) {
      if (!Object.hasOwn(source, top)) continue;
      const v = source[top];
      if (below === undefined || v === null || typeof v !== "object" || Array.isArray(v)) {
        out[top] = v;
        continue;
      }
      const inner: Record<string, unknown> = {};
      const o = v as Record<string, unknown>;
      for (const k of below) if (Object.hasOwn(o, k)) inner[k] = o[k];
      out[top] = inner;
    }
    return out;
  };
}

/**
 * Runs a plan over documents held in memory (the things registry), answering
 * in the same Elasticsearch 5.6 shape as FIND. The terms on thingName and
 * thingType that the plan leaves to the store's candidate read are applied
 * here, as that read would.
 */
export function searchDocs(plan: FindPlan, docs: readonly Doc[], shards: number, time?: TimeBudget): Json {
  const started = performance.now();
  plan.budget.start(time, started);
  const { thingNames, thingTypes } = plan.pushdown;
  const matches: Doc[] = [];
  for (const doc of docs) {
    plan.budget.tick();
    if (thingTypes && !thingTypes.has(doc.thingType)) continue;
    if (thingNames && !thingNames.has(String(doc.source.thingName))) continue;
    if (!plan.matcher.test(doc)) continue;
    doc.score = plan.matcher.score(doc);
    matches.push(doc);
  }
  return answer(allOf(matches), plan, shards, started, pageOf(matches, plan));
}

/** Matches held as documents: the page is chosen from all of them, the aggregations run over them. */
function allOf(matches: Doc[]): Found {
  return { page: matches, total: matches.length, aggregate: (a) => a.run(matches) };
}

/** `page` is the hits' matches (`pageOf`); `whole` their whole documents when the matches hold them cut down. */
function answer(
  found: Found,
  plan: FindPlan,
  shards: number,
  started: number,
  page: Doc[],
  whole?: ReadonlyMap<number, string>,
): Json {
  const hits = hitsOf(page, found.page, plan, whole);
  const response: Json = {
    took: 0,
    timed_out: false,
    _shards: { total: shards, successful: shards, skipped: 0, failed: 0 },
    hits: { total: found.total, max_score: maxScore(found.page, plan), hits },
  };
  if (plan.aggs.length > 0) {
    plan.aggContext.search.shards = shards;
    const aggregations: Json = {};
    for (const a of plan.aggs) aggregations[a.name] = found.aggregate(a);
    response.aggregations = aggregations;
  }
  response.took = Math.round(performance.now() - started);
  return response;
}

function scored(plan: FindPlan): boolean {
  return !plan.sorter || plan.sorter.tracksScores || plan.trackScores;
}

function maxScore(matches: Doc[], plan: FindPlan): number | null {
  // ES 5.6 counts hits without scoring when size is 0, and reports 0.0 then.
  if (plan.size === 0) return 0;
  // A sort that merely includes _score fills the hits' scores but, like ES, tracks no maximum.
  if (!(!plan.sorter || plan.sorter.byScore || plan.trackScores) || matches.length === 0) return null;
  let max = -Infinity;
  for (const d of matches) if (d.score > max) max = d.score;
  return max;
}

/** The matches on the requested page, in the answer's order. */
function pageOf(matches: Doc[], plan: FindPlan): Doc[] {
  if (plan.size === 0 || plan.from >= matches.length) return [];
  const sorter = plan.sorter;
  const compare = sorter ? sorter.compare : (a: Doc, b: Doc) => b.score - a.score || a.id - b.id;
  return [...matches].sort(compare).slice(plan.from, plan.from + plan.size);
}

function hitsOf(page: Doc[], matches: Doc[], plan: FindPlan, whole: ReadonlyMap<number, string> | undefined): Json[] {
  const sorter = plan.sorter;
  const withScore = scored(plan);
  const sortValues = sorter && !sorter.byScore ? sortValuesOf(sorter, page, matches) : undefined;
  return page.map((d, i) => {
    let doc = d;
    if (whole) {
      const json = whole.get(d.id);
      if (json === undefined) throw new Error(`observation ${d.id} is missing from the snapshot it matched in`);
      doc = { ...d, source: JSON.parse(json) as Record<string, unknown> };
    }
    return hitOf(doc, withScore ? d.score : null, plan.source, sortValues?.[i]);
  });
}
