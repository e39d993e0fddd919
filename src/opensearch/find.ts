import { ApiError } from "../errors/index.js";
import {
  FIND_LIMITS,
  badQuery,
  checkJsonDepth,
  findJson,
  planFind,
  runFind,
  timeBudgetExceeded,
  type FindRunner,
  type ObservationReader,
} from "../observations/index.js";
import { errorOf, OpenSearchUnavailable, type OpenSearchClient } from "./client.js";
import { fromOpenSearch } from "./answer.js";
import { allPattern, typePattern, type IndexLayout } from "./indices.js";
import { toOpenSearch } from "./translate.js";

export interface OpenSearchFindOptions {
  client: OpenSearchClient;
  layout: IndexLayout;
  /** Milliseconds a request may take (`DMS_FIND_TIMEOUT_MS`). */
  budgetMs: number;
  /** `/things/find` searches the registry's documents in memory: the embedded runner does it. */
  things: FindRunner;
}

type Json = Record<string, unknown>;

/** Index patterns longer than this go as one pattern of every index, the thing types then filtered by the query. */
const MAX_INDEX_LIST = 3000;

/**
 * FIND answered by OpenSearch: the request is planned as the embedded evaluator plans it (so the
 * same requests are refused with the same messages, and the same limits hold), then sent as
 * OpenSearch 2.x reads it (`toOpenSearch`) to the indices of the caller's thing types, filtered
 * by them as well, and its answer is given back in the embedded evaluator's shape
 * (`fromOpenSearch`). The request runs within the FIND budget: OpenSearch cancels it past it.
 */
export function openSearchFind(options: OpenSearchFindOptions): FindRunner {
  const { client, layout, budgetMs, things } = options;
  return {
    async find(request, now, scope) {
      checkJsonDepth(request, FIND_LIMITS.jsonDepth);
      const plan = planFind(request, now, { fieldTypes: scope.fieldTypes });
      const types = scope.thingTypes;
      // Nothing to search: the embedded answer of no observations, aggregations of nothing included.
      if (types.length === 0) return findJson(await runFind(NO_OBSERVATIONS, plan, { thingTypes: [] }));
      const body = toOpenSearch(request as Json, now);
      const query: Json = { bool: { must: [body.query], filter: [{ terms: { thingType: [...types] } }] } };
      const listed = types.map((t) => typePattern(layout, t)).join(",");
      const indices = listed.length > MAX_INDEX_LIST ? allPattern(layout) : listed;
      const params = [
        "rest_total_hits_as_int=true",
        "ignore_unavailable=true",
        "allow_no_indices=true",
        `cancel_after_time_interval=${budgetMs}ms`,
      ].join("&");
      const started = performance.now();
      let answer;
      try {
        answer = await client.call("POST", `/${indices}/_search?${params}`, {
          json: { ...body, query, track_total_hits: true },
          signal: AbortSignal.timeout(budgetMs),
        });
      } catch (err) {
        if (err instanceof Error && (err.name === "TimeoutError" || err.name === "AbortError"))
          throw timeBudgetExceeded(budgetMs);
        if (err instanceof OpenSearchUnavailable) throw unavailable(err.message);
        throw err;
      }
      if (answer.status !== 200) throw refusal(answer.status, answer.body, budgetMs);
      const result = answer.body as Json;
      const shards = result._shards as
        { failed?: number; failures?: { status?: number; reason?: unknown }[] } | undefined;
      if ((shards?.failed ?? 0) > 0) {
        const failure = shards?.failures?.[0];
        throw refusal(failure?.status ?? 500, { error: failure?.reason }, budgetMs);
      }
      if (result.timed_out === true || performance.now() - started > budgetMs) throw timeBudgetExceeded(budgetMs);
      const aggs = body.aggs ?? body.aggregations;
      return findJson(fromOpenSearch(result, layout, { size: plan.size, shards: types.length, aggs }));
    },
    search: (request, now, docs, shards, caller) => things.search(request, now, docs, shards, caller),
    close: () => things.close(),
  };
}

/** Search errors of the request's own making (OpenSearch answers some of them with 5xx). */
const REQUEST_ERRORS = new Set([
  "parsing_exception",
  "query_shard_exception",
  "illegal_argument_exception",
  "number_format_exception",
  "too_many_buckets_exception",
  "aggregation_execution_exception",
  "x_content_parse_exception",
]);

/** OpenSearch's refusal of a search as the interface's error. */
function refusal(status: number, body: unknown, budgetMs: number): ApiError {
  const { type, reason } = errorOf(body);
  if (type === "task_cancelled_exception") return timeBudgetExceeded(budgetMs);
  if (status === 400 || (type !== undefined && REQUEST_ERRORS.has(type))) return badQuery(`OpenSearch: ${reason}`);
  // Busy, or a shard not (yet) started: the same request may succeed in a moment.
  if (status === 429 || status === 503) return unavailable(`OpenSearch cannot answer now: ${type ?? status} ${reason}`);
  return new ApiError("INTERNAL_ERROR", `OpenSearch could not answer: ${type ?? status} ${reason}`);
}

function unavailable(why: string): ApiError {
  return new ApiError("INTERNAL_ERROR", why, undefined, 503);
}

/** A reader of no observations: FIND over no thing types reads nothing. */
const NO_OBSERVATIONS: ObservationReader = {
  candidates: async () => [],
  scan: async () => new Map(),
  exportPage: async () => [],
  close: async () => {},
};
