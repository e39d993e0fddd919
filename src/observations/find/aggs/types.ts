import type { FieldTypes } from "../hits.js";
/** What every aggregation shares: its compile context, its compiled form, the builders' shape. */
import type { Json } from "../errors.js";
import type { Doc } from "../fields.js";
import type { QueryBudget } from "../limits.js";
import type { RowSet } from "../vector/matches.js";

export interface AggContext {
  now: number;
  /** The request's counters: aggregations compiled, buckets answered, time left. */
  budget: QueryBudget;
  /** Levels of aggregations enclosing these. */
  depth?: number;
  /**
   * What the aggregations see of the search, known only when it runs. Held by
   * reference: each nesting level copies the context, and a fact written into a
   * copy's own field would not reach the levels compiled from another copy.
   */
  search: SearchFacts;
  /** Declared types of the searched fields (top_hits' sort sentinels). */
  fieldTypes?: FieldTypes;
}

export interface SearchFacts {
  /** Shards searched (one per thing type), set before each run: ES sizes its per-shard terms by it. */
  shards: number;
}

/**
 * A compiled aggregation: run over the documents of its bucket, it answers the ES 5.6 shape.
 * `rows`, where the aggregation and all below it read only columns, answers the same over
 * matches read from closed days' columns (find/vector).
 */
export interface Agg {
  name: string;
  run(docs: Doc[]): Json;
  rows?: (set: RowSet) => Json;
}

export type Output = Json;

export interface BuildContext {
  ctx: AggContext;
  subs: Agg[];
  where: string;
}

/** An aggregation's answer over documents and, where it reads only columns, over rows of the matches. */
export type Answer = ((docs: Doc[]) => Output) & { rows?: (set: RowSet) => Output };

export type Builder = (body: Json, b: BuildContext) => Answer;

/** An answer over documents and the same over rows. */
export function withRows(docs: (docs: Doc[]) => Output, rows: (set: RowSet) => Output): Answer {
  return Object.assign(docs, { rows });
}
