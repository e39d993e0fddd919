import { fileURLToPath } from "node:url";
import { Piscina } from "piscina";
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
import { planTask, type PlanOutcome, type PlanTask } from "./plan-worker.js";
import { toOpenSearch } from "./translate.js";

export interface OpenSearchFindOptions {
  client: OpenSearchClient;
  layout: IndexLayout;
  /** Milliseconds a request may take (`DMS_FIND_TIMEOUT_MS`). */
  budgetMs: number;
  /** Threads that plan requests (`DMS_FIND_THREADS`); 0 plans on this thread (tests). */
  planThreads: number;
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
  const planner = options.planThreads > 0 ? threadPlanner(options.planThreads, budgetMs) : undefined;
  return {
    async find(request, now, scope) {
      const deadline = Date.now() + budgetMs;
      // Checked here without recursion, so that no request can overflow the stack of the clone to a thread.
      checkJsonDepth(request, FIND_LIMITS.jsonDepth);
      const types = scope.thingTypes;
      // Nothing to search: the embedded answer of no observations, aggregations of nothing included.
      if (types.length === 0) {
        const plan = planFind(request, now, { fieldTypes: scope.fieldTypes });
        return findJson(await runFind(NO_OBSERVATIONS, plan, { thingTypes: [] }));
      }
      const task: PlanTask = { request, now, fieldTypes: scope.fieldTypes };
      const plan = planner ? await planner.plan(task, deadline) : planTask(task);
      if ("error" in plan)
        throw new ApiError(plan.error.messageKey, plan.error.message, plan.error.property, plan.status);
      const body = toOpenSearch(request as Json, now);
      const query: Json = { bool: { must: [body.query], filter: [{ terms: { thingType: [...types] } }] } };
      const listed = types.map((t) => typePattern(layout, t)).join(",");
      const indices = listed.length > MAX_INDEX_LIST ? allPattern(layout) : listed;
      const params = [
        "rest_total_hits_as_int=true",
        "ignore_unavailable=true",
        "allow_no_indices=true",
        `cancel_after_time_interval=${Math.max(1, deadline - Date.now())}ms`,
      ].join("&");
      let answer;
      try {
        answer = await client.call("POST", `/${indices}/_search?${params}`, {
          json: { ...body, query, track_total_hits: true },
          signal: AbortSignal.timeout(Math.max(1, deadline - Date.now())),
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
      if (result.timed_out === true || Date.now() > deadline) throw timeBudgetExceeded(budgetMs);
      const aggs = body.aggs ?? body.aggregations;

      return findJson(fromOpenSearch(result, layout, { size: plan.size, shards: types.length, aggs }));
    },
    search: (request, now, docs, shards, caller) => things.search(request, now, docs, shards, caller),
    close: async () => {
      await planner?.close();
      await things.close();
    },
  };
}

/** How long an idle planning thread lives: a new one loads and compiles the planner again. */
const THREAD_IDLE_MS = 15 * 60_000;
/** Requests waiting for a planning thread; each also leaves at its budget, so this is a memory bound only. */
const MAX_QUEUE = 1000;

/**
 * Plans on threads of their own, as the embedded runner does, so that no request (1,000 patterns
 * to compile) holds the service's thread; a planning past the budget ends its thread.
 */
function threadPlanner(threads: number, budgetMs: number) {
  const pool = new Piscina<PlanTask, PlanOutcome>({
    filename: fileURLToPath(new URL("./plan-worker.mjs", import.meta.url)),
    minThreads: 0,
    maxThreads: threads,
    idleTimeout: THREAD_IDLE_MS,
    maxQueue: MAX_QUEUE,
  });
  return {
    async plan(task: PlanTask, deadline: number): Promise<PlanOutcome> {
      try {
        return await pool.run(task, { signal: AbortSignal.timeout(Math.max(1, deadline - Date.now())) });
      } catch (err) {
        if (err instanceof Error && (err.name === "AbortError" || err.name === "TimeoutError"))
          throw timeBudgetExceeded(budgetMs);
        if (err instanceof Error && err.message === "Task queue is at limit")
          throw badQuery(`${MAX_QUEUE} queries are waiting already; retry when they are answered`);
        throw err;
      }
    },
    close: () => pool.destroy(),
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
