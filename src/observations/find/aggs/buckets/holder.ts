/** A bucket and what it holds (documents or rows of the column matches), rendered with its sub-aggregations. */
import type { Doc } from "../../fields.js";
import { inIdOrder, type Matches, type RowSet } from "../../vector/matches.js";
import type { Agg, Output } from "../types.js";

export function runSubs(subs: Agg[], docs: Doc[], out: Output): Output {
  for (const s of subs) out[s.name] = s.run(docs);
  return out;
}

/** What a bucket holds: documents (`Doc[]`) or rows of the column matches (`RowSet`). */
export interface Holder<S> {
  count(s: S): number;
  empty(): S;
  /** One term's parts from several shards as one, in id order (as ES reduces them). */
  merge(parts: S[]): S;
  runSubs(subs: Agg[], s: S, out: Output): Output;
}

export const DOCS: Holder<Doc[]> = {
  count: (docs) => docs.length,
  empty: () => [],
  merge: (parts) => parts.flat().sort((x, y) => x.id - y.id),
  runSubs,
};

export function rowsHolder(matches: Matches): Holder<RowSet> {
  return {
    count: (s) => s.rows.length,
    empty: () => ({ matches, rows: new Int32Array(0) }),
    merge: (parts) => {
      // With ids in match order every set is in id order already.
      if (parts.length === 1 && matches.idAscending) return parts[0]!;
      const rows = new Int32Array(parts.reduce((n, p) => n + p.rows.length, 0));
      let at = 0;
      for (const p of parts) {
        rows.set(p.rows, at);
        at += p.rows.length;
      }
      return { matches, rows: inIdOrder(matches, rows) };
    },
    runSubs: (subs, set, out) => {
      for (const s of subs) out[s.name] = s.rows!(set);
      return out;
    },
  };
}

export interface Bucket<S = Doc[]> {
  key: unknown;
  docs: S;
  extra?: Output;
}

export function renderBucket<S>(h: Holder<S>, b: Bucket<S>, keyFields: Output, subs: Agg[]): Output {
  return h.runSubs(subs, b.docs, { ...keyFields, doc_count: h.count(b.docs), ...b.extra });
}
