import { required } from "../../errors/index.js";
import type { ObservationReader } from "../reader.js";
import { compileAggs, type Agg, type AggContext } from "./aggs/index.js";
import { badQuery, intAt, isObject, type Json } from "./errors.js";
import type { Doc } from "./fields.js";
import { compileSort, compileSource, hitOf, sortValuesOf, type Sorter } from "./hits.js";
import { FIND_LIMITS, QueryBudget, checkJsonDepth, overLimit, type TimeBudget } from "./limits.js";
import { compileQuery, newPushdown, type Matcher, type Pushdown } from "./query.js";

/** ES's answer to a search request without a query: every document, each scored 1. */
const MATCH_ALL: Matcher = { test: () => true, score: () => 1 };

/** The request keys FIND understands; anything else is refused by name. */
const REQUEST_KEYS = ["query", "aggs", "aggregations", "size", "from", "sort", "_source", "track_scores", "timeout"];
/**
 * Observations one FIND may read. Every candidate is held parsed while the
 * aggregations run, so this bounds the memory of a query.
 */
export const MAX_CANDIDATES = 1_000_000;

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
}

/**
 * Parses the `query` property of a FIND body (an ES 5.6 search request) into
 * a plan, enforcing the interface's requirements: a `range` on `timestamp`
 * with `gte` that every hit must satisfy, and no `global` aggregation.
 * `requireTimestamp: false` plans a search of documents that have no
 * timestamp (things), where a missing query matches all, as in ES.
 */
export function planFind(request: unknown, now: number, { requireTimestamp = true } = {}): FindPlan {
  if (request === undefined || request === null) throw required("query");
  if (!isObject(request)) throw badQuery("must be an object");
  for (const k of Object.keys(request)) if (!REQUEST_KEYS.includes(k)) throw badQuery(`unsupported request key [${k}]`);
  if (request.aggs !== undefined && request.aggregations !== undefined)
    throw badQuery("give [aggs] or [aggregations], not both");
  if (request.query === undefined && requireTimestamp)
    throw badQuery("a [range] on [timestamp] with [gte] is required");
  const pushdown = newPushdown();
  const budget = new QueryBudget();
  const matcher = request.query === undefined ? MATCH_ALL : compileQuery(request.query, { now, pushdown }, true, false);
  if (requireTimestamp && !pushdown.hasTimestampGte)
    throw badQuery("a [range] on [timestamp] with [gte] is required in a must or filter clause");
  const aggContext: AggContext = { now, budget, search: { shards: 1 } };
  const aggs = compileAggs(request.aggs ?? request.aggregations, aggContext);
  const size = request.size === undefined ? 10 : intAt(request.size, "size");
  const from = request.from === undefined ? 0 : intAt(request.from, "from");
  if (from + size > FIND_LIMITS.resultWindow)
    throw overLimit("[from] + [size] is too large", FIND_LIMITS.resultWindow, "index.max_result_window");
  if (request.track_scores !== undefined && typeof request.track_scores !== "boolean")
    throw badQuery("[track_scores] must be a boolean");
  // Last: the clauses above refuse deep nesting by name; this catches it where nothing is compiled (`meta`).
  checkJsonDepth(request, FIND_LIMITS.jsonDepth);
  return {
    budget,
    pushdown,
    matcher,
    aggs,
    aggContext,
    size,
    from,
    sorter: compileSort(request.sort),
    trackScores: request.track_scores === true,
    source: compileSource(request._source),
  };
}

export interface FindScope {
  /** Thing types whose observations the caller may read, already limited by `queryScope.thingTypes`. */
  thingTypes: readonly string[];
}

/**
 * Runs a plan over the store and answers exactly as Elasticsearch 5.6 does.
 * With a time budget, a run that takes longer stops with INVALID_ARGUMENTS.
 */
export function runFind(
  reader: ObservationReader,
  plan: FindPlan,
  scope: FindScope,
  limit = MAX_CANDIDATES,
  time?: TimeBudget,
): Json {
  const started = performance.now();
  const budget = plan.budget;
  budget.start(time, started);
  const p = plan.pushdown;
  const types = p.thingTypes ? scope.thingTypes.filter((t) => p.thingTypes!.has(t)) : scope.thingTypes;
  const matches: Doc[] = [];
  const empty = types.length === 0 || p.tsFrom > p.tsTo || (p.thingNames !== undefined && p.thingNames.size === 0);
  if (!empty) {
    const rows = reader.candidates(
      {
        tsFrom: p.tsFrom,
        tsTo: p.tsTo,
        thingTypes: types,
        thingNames: p.thingNames ? [...p.thingNames] : undefined,
      },
      limit + 1,
    );
    if (rows.length > limit) {
      throw badQuery(`it would read more than ${limit} observations: narrow the timestamp range or the thing types`);
    }
    budget.tick();
    const m = plan.matcher;
    for (const [id, thingType, json] of rows) {
      budget.tick();
      const doc: Doc = { id, thingType, source: JSON.parse(json) as Record<string, unknown>, score: 0 };
      if (!m.test(doc)) continue;
      doc.score = m.score(doc);
      matches.push(doc);
    }
  }
  return answer(matches, plan, scope.thingTypes.length, started);
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
  return answer(matches, plan, shards, started);
}

function answer(matches: Doc[], plan: FindPlan, shards: number, started: number): Json {
  const hits = pageOf(matches, plan);
  const response: Json = {
    took: 0,
    timed_out: false,
    _shards: { total: shards, successful: shards, skipped: 0, failed: 0 },
    hits: { total: matches.length, max_score: maxScore(matches, plan), hits },
  };
  if (plan.aggs.length > 0) {
    plan.aggContext.search.shards = shards;
    const aggregations: Json = {};
    for (const a of plan.aggs) aggregations[a.name] = a.run(matches);
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

function pageOf(matches: Doc[], plan: FindPlan): Json[] {
  if (plan.size === 0 || plan.from >= matches.length) return [];
  const sorter = plan.sorter;
  const compare = sorter ? sorter.compare : (a: Doc, b: Doc) => b.score - a.score || a.id - b.id;
  const page = [...matches].sort(compare).slice(plan.from, plan.from + plan.size);
  const withScore = scored(plan);
  const sortValues = sorter && !sorter.byScore ? sortValuesOf(sorter, page, matches) : undefined;
  return page.map((d, i) => hitOf(d, withScore ? d.score : null, plan.source, sortValues?.[i]));
}
