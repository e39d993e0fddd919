import { badQuery, isObject, onlyKeys, stringAt, type Json } from "../../errors.js";
import { compileQuery, newPushdown, type Matcher } from "../../query.js";
import type { Builder, Output } from "../types.js";
import { runSubs } from "./holder.js";

export const filters: Builder = (body, b) => {
  onlyKeys(body, ["filters", "other_bucket", "other_bucket_key"], b.where);
  const ctx = { now: b.ctx.now, pushdown: newPushdown() };
  const named = isObject(body.filters);
  if (!named && !Array.isArray(body.filters)) throw badQuery(`[${b.where}.filters] must be an object or an array`);
  const list: [string, Matcher][] = named
    ? Object.entries(body.filters as Json).map(([k, q]) => [k, compileQuery(q, ctx, false, true)])
    : (body.filters as unknown[]).map((q, i) => [String(i), compileQuery(q, ctx, false, true)]);
  const otherKey =
    body.other_bucket_key === undefined ? undefined : stringAt(body.other_bucket_key, `${b.where}.other_bucket_key`);
  const other = body.other_bucket === true || otherKey !== undefined;
  return (docs) => {
    const results: [string, Output][] = list.map(([k, m]) => {
      const inside = docs.filter((d) => m.test(d));
      return [k, runSubs(b.subs, inside, { doc_count: inside.length })];
    });
    if (other) {
      const rest = docs.filter((d) => !list.some(([, m]) => m.test(d)));
      results.push([otherKey ?? "_other_", runSubs(b.subs, rest, { doc_count: rest.length })]);
    }
    if (named) return { buckets: Object.fromEntries(results) };
    return { buckets: results.map(([, o]) => o) };
  };
};
