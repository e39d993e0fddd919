/** The `order` of a bucket aggregation: parsed once, then applied to rendered buckets. */
import { badQuery, isObject, objectAt } from "../../errors.js";
import type { Output } from "../types.js";
import type { Bucket, Holder } from "./holder.js";

export type Order = { path: string; desc: boolean }[];

export function parseOrder(v: unknown, where: string, fallback: Order, subs: readonly { name: string }[]): Order {
  if (v === undefined) return fallback;
  const items = Array.isArray(v) ? v : [v];
  return items.map((item) => {
    const entries = Object.entries(objectAt(item, `${where}.order`));
    if (entries.length !== 1) throw badQuery(`[${where}.order] each entry must name one key`);
    const [path, dir] = entries[0]!;
    if (dir !== "asc" && dir !== "desc") throw badQuery(`[${where}.order.${path}] must be asc or desc`);
    // A sub-aggregation the order names must exist, whatever the data: ES refuses the request before it runs.
    const name = path.split(".")[0]!;
    if (!["_key", "_term", "_count"].includes(path) && !subs.some((s) => s.name === name))
      throw badQuery(`[order] names unknown aggregation [${name}]`);
    return { path: path === "_term" ? "_key" : path, desc: dir === "desc" };
  });
}

/** A sub-aggregation value for ordering: `agg` (single value) or `agg.metric` / `agg[50]`. */
function orderValue(out: Output, path: string): number {
  const dot = path.indexOf(".");
  const name = dot < 0 ? path : path.slice(0, dot);
  const sub = out[name];
  if (!isObject(sub)) throw badQuery(`[order] names unknown aggregation [${name}]`);
  if (dot < 0) {
    if ("value" in sub) return (sub.value as number | null) ?? -Infinity;
    if ("doc_count" in sub) return sub.doc_count as number;
    throw badQuery(`[order] aggregation [${name}] is multi-valued: name the metric`);
  }
  const metric = path.slice(dot + 1);
  const v = sub[metric] ?? (isObject(sub.values) ? sub.values[metric] : undefined);
  if (v === undefined) throw badQuery(`[order] unknown metric [${path}]`);
  return (v as number | null) ?? -Infinity;
}

function compareKeys(a: unknown, b: unknown): number {
  if (typeof a === "number" && typeof b === "number") return a - b;
  const sa = String(a);
  const sb = String(b);
  return sa < sb ? -1 : sa > sb ? 1 : 0;
}

export function sortBuckets<S>(
  h: Holder<S>,
  rendered: { bucket: Bucket<S>; out: Output }[],
  order: Order,
  tieByKey: boolean,
): void {
  rendered.sort((x, y) => {
    for (const o of order) {
      let c: number;
      if (o.path === "_key") c = compareKeys(x.bucket.key, y.bucket.key);
      else if (o.path === "_count") c = h.count(x.bucket.docs) - h.count(y.bucket.docs);
      else c = orderValue(x.out, o.path) - orderValue(y.out, o.path);
      if (c !== 0) return o.desc ? -c : c;
    }
    return tieByKey ? compareKeys(x.bucket.key, y.bucket.key) : 0;
  });
}
