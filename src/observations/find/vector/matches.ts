/**
 * The matches of a FIND answered from closed days' columns: for each match its
 * day and row, and, built when an aggregation or the sort first reads a path, that
 * path's values over all matches in one typed array. Buckets are lists of match
 * numbers (`RowSet`) in the order the document path holds their documents, so the
 * shared aggregation code adds the same values in the same order.
 */
import type { DayColumns } from "../../columns.js";
import { toNumber, type Doc } from "../fields.js";

/** A request the column path cannot answer after all (a path of mixed kinds): the document path answers it. */
export class NotFromColumns extends Error {}

/** A path's values over the matches. */
export type MatchColumn =
  /** NaN where a match has no value. */
  | { kind: "number"; values: Float64Array }
  /** -1 where a match has no value. */
  | { kind: "keyword"; codes: Int32Array; dictionary: string[] }
  | { kind: "absent" };

/** The rows of one day that matched, ascending. */
export interface MatchedDay {
  columns: DayColumns;
  rows: Int32Array;
}

/** Matches of a bucket, by their numbers in `matches`. */
export interface RowSet {
  matches: Matches;
  rows: Int32Array;
  /** Set when every row is known to be of this one shard (a terms bucket of one shard): then its rows' shards are not read. */
  shard?: number;
}

/** Whether a day's ids strictly ascend over all its rows (then over any of its rows too), kept while its columns are. */
const idsAscend = new WeakMap<DayColumns, boolean>();

function dayIdsAscend(columns: DayColumns): boolean {
  let ascending = idsAscend.get(columns);
  if (ascending === undefined) {
    ascending = true;
    for (let r = 1; r < columns.id.length && ascending; r++) ascending = columns.id[r]! > columns.id[r - 1]!;
    idsAscend.set(columns, ascending);
  }
  return ascending;
}

export class Matches {
  readonly count: number;
  /** Each match's shard (thing type): an index into `shards`, which are in name order as the document path sorts them. */
  readonly shard: Int32Array;
  readonly shards: string[];
  /** Whether ids ascend in match order: then a bucket in id order is one in match order. */
  readonly idAscending: boolean;
  /** Where each day's matches start in the match numbers. */
  private readonly starts: number[] = [];
  private readonly built = new Map<string, MatchColumn>();
  private readonly numeric = new Map<string, Float64Array>();
  private ids: Float64Array | undefined;

  constructor(private readonly days: readonly MatchedDay[]) {
    let count = 0;
    const names = new Set<string>();
    for (const { columns, rows } of days) {
      this.starts.push(count);
      count += rows.length;
      for (const name of columns.thingTypes) names.add(name);
    }
    this.count = count;
    this.shards = [...names].sort();
    const shardOf = new Map(this.shards.map((name, i) => [name, i]));
    this.shard = new Int32Array(count);
    let at = 0;
    for (const { columns, rows } of days) {
      const shards = columns.thingTypes.map((name) => shardOf.get(name)!);
      for (let i = 0; i < rows.length; i++, at++) this.shard[at] = shards[columns.thingType[rows[i]!]!]!;
    }
    this.idAscending = this.idsAscend();
  }

  /** Each match's id, read when a bucket is put in id order or a hit becomes a document. */
  get id(): Float64Array {
    if (this.ids) return this.ids;
    const ids = new Float64Array(this.count);
    let at = 0;
    for (const { columns, rows } of this.days) for (let i = 0; i < rows.length; i++) ids[at++] = columns.id[rows[i]!]!;
    return (this.ids = ids);
  }

  /** Whether ids strictly ascend in match order, from each day's (checked once while its columns are kept) and the days' edges. */
  private idsAscend(): boolean {
    let last = -Infinity;
    for (const { columns, rows } of this.days) {
      if (rows.length === 0) continue;
      if (dayIdsAscend(columns)) {
        if (columns.id[rows[0]!]! <= last) return false;
        last = columns.id[rows[rows.length - 1]!]!;
        continue;
      }
      for (let i = 0; i < rows.length; i++) {
        const id = columns.id[rows[i]!]!;
        if (id <= last) return false;
        last = id;
      }
    }
    return true;
  }

  /** Every match, in match order (days ascending, each day's rows in ts order): the order the document path scans. */
  all(): RowSet {
    const rows = new Int32Array(this.count);
    for (let i = 0; i < rows.length; i++) rows[i] = i;
    return { matches: this, rows };
  }

  /** The values of a leaf path over the matches; a path holding booleans or mixed kinds is not answered here. */
  column(path: string): MatchColumn {
    let column = this.built.get(path);
    if (!column) this.built.set(path, (column = this.build(path)));
    return column;
  }

  /** A path's values as metrics and histograms read them (numeric strings as numbers), NaN where none. */
  numbers(path: string): Float64Array {
    let values = this.numeric.get(path);
    if (values) return values;
    const column = this.column(path);
    if (column.kind === "number") values = column.values;
    else if (column.kind === "absent") values = new Float64Array(this.count).fill(NaN);
    else {
      const byCode = Float64Array.from(column.dictionary, (s) => toNumber(s) ?? NaN);
      values = new Float64Array(this.count);
      for (let i = 0; i < values.length; i++) {
        const c = column.codes[i]!;
        values[i] = c < 0 ? NaN : byCode[c]!;
      }
    }
    this.numeric.set(path, values);
    return values;
  }

  /** Match `i` as the document path holds it: its document cut down to `paths`. */
  document(i: number, paths: ReadonlySet<string>): Doc {
    let d = this.days.length - 1;
    while (this.starts[d]! > i) d--;
    const { columns, rows } = this.days[d]!;
    const r = rows[i - this.starts[d]!]!;
    return {
      id: columns.id[r]!,
      thingType: columns.thingTypes[columns.thingType[r]!]!,
      source: columns.project(columns.projection(paths)!, r),
      score: 0,
    };
  }

  private build(path: string): MatchColumn {
    let kind: "number" | "keyword" | undefined;
    for (const { columns } of this.days) {
      const leaf = columns.leaf(path);
      if (!leaf) continue;
      if (leaf.kind === "mixed" || (kind !== undefined && leaf.kind !== kind)) throw new NotFromColumns(path);
      kind = leaf.kind;
    }
    if (kind === undefined) return { kind: "absent" };
    let at = 0;
    if (kind === "number") {
      const values = new Float64Array(this.count).fill(NaN);
      for (const { columns, rows } of this.days) {
        const leaf = columns.leaf(path);
        if (leaf?.kind === "number") for (let i = 0; i < rows.length; i++) values[at + i] = leaf.values[rows[i]!]!;
        at += rows.length;
      }
      return { kind, values };
    }
    const codes = new Int32Array(this.count).fill(-1);
    const dictionary: string[] = [];
    const codeOf = new Map<string, number>();
    for (const { columns, rows } of this.days) {
      const leaf = columns.leaf(path);
      if (leaf?.kind === "keyword") {
        // The day's codes as codes of the matches' dictionary, each looked up when first met.
        const remap = new Int32Array(leaf.dictionary.length).fill(-1);
        for (let i = 0; i < rows.length; i++) {
          const c = leaf.codes[rows[i]!]!;
          if (c < 0) continue;
          let g = remap[c]!;
          if (g < 0) {
            const value = leaf.dictionary[c]!;
            g = codeOf.get(value) ?? -1;
            if (g < 0) {
              g = dictionary.push(value) - 1;
              codeOf.set(value, g);
            }
            remap[c] = g;
          }
          codes[at + i] = g;
        }
      }
      at += rows.length;
    }
    return { kind, codes, dictionary };
  }
}

/** `rows` put in id order: the order of a merged terms bucket in the document path. */
export function inIdOrder(matches: Matches, rows: Int32Array): Int32Array {
  if (matches.idAscending) return rows.sort();
  const id = matches.id;
  return rows.sort((a, b) => id[a]! - id[b]!);
}
