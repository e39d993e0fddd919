import type { ApiError } from "../../errors/index.js";
import { badQuery } from "./errors.js";

/**
 * What one FIND request may ask for. Each is checked while the request is
 * planned (or, for buckets and time, while it runs) and answered with
 * INVALID_ARGUMENTS on `query` naming the limit. docs/observations.md lists
 * them with the Elasticsearch setting each follows.
 */
export const FIND_LIMITS = {
  /** `index.max_result_window` (ES 5.6 default): `from + size` of the hits. */
  resultWindow: 10_000,
  /** `index.max_inner_result_window` (ES 6 default; 5.6 has none): `from + size` of a top_hits aggregation. */
  innerResultWindow: 100,
  /** `indices.query.bool.max_nested_depth` (ES 7 default; 5.6 has none and overflows its stack). */
  queryDepth: 20,
  /** `indices.query.bool.max_clause_count` (ES 5.6 default): clauses of one bool query. */
  boolClauses: 1024,
  /** `index.max_terms_count` (ES 6 default; 5.6 has none): values of one terms or ids query. */
  terms: 65_536,
  /** Levels of sub-aggregations (ES has no such setting; dashboards use 2 to 4). */
  aggregationDepth: 10,
  /** Aggregations in one request, at all levels (ES has no such setting). */
  aggregations: 100,
  /** `search.max_buckets` (ES 7.9 default; 5.6 has none): buckets in one response. */
  buckets: 65_535,
  /** Nesting of the request's JSON anywhere, including `meta` and values that are echoed back. */
  jsonDepth: 200,
} as const;

/** The error of a request over one of the limits. */
export function overLimit(what: string, limit: number, setting?: string): ApiError {
  const es = setting ? ` (Elasticsearch's ${setting})` : "";
  return badQuery(`${what}: the limit is ${limit.toLocaleString("en")}${es}`);
}

/**
 * The running counters of one FIND request: buckets made so far and the time
 * it may still take. Evaluation calls `tick()` in its loops, so a request over
 * its budget stops itself between two documents.
 */
export class QueryBudget {
  private aggregations = 0;
  private buckets = 0;
  private deadline = Infinity;
  private budgetMs = 0;

  /** Starts a run: the counters reset, the clock starts with `time.remainingMs` left of `time.budgetMs`. */
  start(time: TimeBudget | undefined, startedAt = performance.now()): void {
    this.buckets = 0;
    this.budgetMs = time?.budgetMs ?? 0;
    this.deadline = time === undefined ? Infinity : startedAt + time.remainingMs;
  }

  /** Counted while the request is planned. */
  addAggregation(): void {
    if (++this.aggregations > FIND_LIMITS.aggregations)
      throw overLimit("the request holds too many aggregations", FIND_LIMITS.aggregations);
  }

  addBuckets(n: number): void {
    this.buckets += n;
    if (this.buckets > FIND_LIMITS.buckets)
      throw overLimit("the aggregations would answer too many buckets", FIND_LIMITS.buckets, "search.max_buckets");
    this.tick();
  }

  /**
   * Called for every document and bucket: reading the clock costs tens of
   * nanoseconds, a document at least a microsecond to parse, and one document
   * may cost milliseconds when a query matches it against many patterns.
   */
  tick(): void {
    if (performance.now() > this.deadline) throw timeBudgetExceeded(this.budgetMs);
  }

  /** Milliseconds left before `tick` throws; Infinity for a run without a budget. */
  remainingMs(): number {
    return this.deadline - performance.now();
  }
}

/** How long a request may take in all, and how much of it is left when it starts to run. */
export interface TimeBudget {
  budgetMs: number;
  remainingMs: number;
}

/** A query that matches more observations than one FIND may hold (`MAX_MATCHES`). */
export function tooManyMatches(maxMatches: number): ApiError {
  return badQuery(
    `more than ${maxMatches.toLocaleString("en")} observations match: narrow the timestamp range, the thing types or the query`,
  );
}

/** A request that ran out of time: the query's fault as far as the caller can act on it. */
export function timeBudgetExceeded(budgetMs: number): ApiError {
  return badQuery(
    `it ran longer than the ${budgetMs} ms a query may take: narrow the timestamp range, the thing types or the aggregations`,
  );
}

/** The deepest nesting of objects and arrays in a JSON value, walked without recursion. */
export function checkJsonDepth(value: unknown, max: number): void {
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== "object") continue;
    if (depth > max) throw overLimit(`it nests deeper than ${max} levels`, max);
    for (const child of Array.isArray(v) ? v : Object.values(v as Record<string, unknown>))
      if (child !== null && typeof child === "object") stack.push([child, depth + 1]);
  }
}
