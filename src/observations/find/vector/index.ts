/**
 * FIND over closed days' columns without an object per row: the query is tested
 * on the columns (filter.ts), the matches are kept as row numbers (matches.ts), and
 * the aggregations run over them (each aggregation's `rows`, beside its document
 * code in aggs/ and sharing its reductions). Only the page's hits become documents.
 *
 * It answers a plan only when every part of it has a column form (`answersFromColumns`,
 * decided when the plan is made) and every day the window spans is closed with
 * columns that answer the request's paths (`ObservationReader.columnScan`); anything
 * else runs on the documents, so this is a faster way to the same answer, never a
 * different one (test/observations/find-columns-vector.test.ts compares the two).
 */
import type { Agg } from "../aggs/index.js";
import type { Json } from "../errors.js";
import type { Doc, FieldUse } from "../fields.js";
import type { Sorter } from "../hits.js";
import { tooManyMatches } from "../limits.js";
import type { Matcher } from "../query.js";
import type { CandidateFilter, DocumentLoader, ObservationReader } from "../../reader.js";
import { matchingRows, shaped } from "./filter.js";
import { Matches, NotFromColumns } from "./matches.js";

export { NotFromColumns } from "./matches.js";

/** What a run found: the matches the page is chosen from, how many matched, each aggregation's answer. */
export interface Found {
  page: Doc[];
  total: number;
  aggregate(agg: Agg): Json;
}

/** The parts of a plan the column path reads. */
export interface ColumnPlan {
  matcher: Matcher;
  aggs: Agg[];
  size: number;
  from: number;
  sorter: Sorter | undefined;
  trackScores: boolean;
  fields: FieldUse;
}

/** Runs answered from the columns in this thread, for tests and benches. */
export const columnRuns = { answered: 0 };

/**
 * Whether a plan has a column form: every clause shaped, every aggregation with rows,
 * and hits that need no score (none, or sorted by one field without `_score`).
 */
export function answersFromColumns(plan: ColumnPlan): boolean {
  if (plan.fields.wholeSource || !shaped(plan.matcher) || !plan.aggs.every((a) => a.rows)) return false;
  if (plan.size === 0) return true;
  const s = plan.sorter;
  const key = s?.keys[0];
  return (
    s !== undefined &&
    s.keys.length === 1 &&
    !s.tracksScores &&
    !plan.trackScores &&
    key!.field !== "_doc" &&
    key!.field !== "_score"
  );
}

/**
 * Answers a plan from the window's column days, `respond` shaping the answer in the
 * same read transaction; undefined when some day is not answered by columns. Throws
 * NotFromColumns when a path holds values of mixed kinds (the caller then runs on documents).
 */
export function runFromColumns<T>(
  reader: ObservationReader,
  plan: ColumnPlan,
  filter: CandidateFilter,
  paths: ReadonlySet<string>,
  maxMatches: number,
  tick: () => void,
  respond: (found: Found, documents: DocumentLoader) => T,
): T | undefined {
  if (!reader.columnScan) return undefined;
  return reader.columnScan(filter, paths, tick, (days, documents) => {
    const scope = { thingTypes: filter.thingTypes, thingNames: filter.thingNames };
    const matched = days.map((day) => ({ columns: day.columns, rows: matchingRows(day, plan.matcher, scope, tick) }));
    const total = matched.reduce((n, d) => n + d.rows.length, 0);
    if (total > maxMatches) throw tooManyMatches(maxMatches);
    const matches = new Matches(matched);
    const page = pageCandidates(matches, plan, paths);
    const all = matches.all();
    const answer = respond({ page, total, aggregate: (a) => a.rows!(all) }, documents);
    columnRuns.answered++;
    return answer;
  });
}

/**
 * The matches that can be on the page, as documents cut down to `paths`: those whose
 * sort value is at least as good as the (from + size)-th best, ties included, so the
 * document path's sort of them puts the same hits on the page.
 */
function pageCandidates(matches: Matches, plan: ColumnPlan, paths: ReadonlySet<string>): Doc[] {
  if (plan.size === 0 || plan.from >= matches.count) return [];
  const key = plan.sorter!.keys[0]!;
  const column = matches.column(key.field);
  // Another kind, or a match without a value, sorts as the document path decides.
  if (column.kind !== "number") throw new NotFromColumns(key.field);
  const values = column.values;
  let ascending = true;
  for (let i = 0; i < values.length; i++) {
    const v = values[i]!;
    if (v !== v) throw new NotFromColumns(key.field);
    if (i > 0 && v < values[i - 1]!) ascending = false;
  }
  const sorted = ascending ? values : Float64Array.from(values).sort();
  const k = Math.min(plan.from + plan.size, matches.count);
  const threshold = key.desc ? sorted[matches.count - k]! : sorted[k - 1]!;
  const page: Doc[] = [];
  for (let i = 0; i < values.length; i++)
    if (key.desc ? values[i]! >= threshold : values[i]! <= threshold) page.push(matches.document(i, paths));
  return page;
}
