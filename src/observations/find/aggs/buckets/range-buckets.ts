/** What range and date_range share: the ranges parsed, sorted as ES sorts them, and filled. */
import { UTC, type DateFormat, type Zone } from "../../dates.js";
import { badQuery, objectAt, onlyKeys, type Json } from "../../errors.js";
import { javaDouble, type Doc } from "../../fields.js";
import type { BuildContext, Output } from "../types.js";
import { DOCS, renderBucket } from "./holder.js";

interface RangeDef {
  key: string | undefined;
  from: number | undefined;
  to: number | undefined;
}

export function rangeBuckets(
  body: Json,
  b: BuildContext,
  parse: (v: unknown, where: string) => number | undefined,
  format: DateFormat | undefined,
  get: (d: Doc) => number[],
  zone: Zone = UTC,
): (docs: Doc[]) => Output {
  if (!Array.isArray(body.ranges) || body.ranges.length === 0) throw badQuery(`[${b.where}] requires [ranges]`);
  const ranges: RangeDef[] = body.ranges.map((r, i) => {
    const o = objectAt(r, `${b.where}.ranges[${i}]`);
    onlyKeys(o, ["key", "from", "to"], `${b.where}.ranges[${i}]`);
    return {
      key: o.key === undefined ? undefined : String(o.key),
      from: o.from === undefined || o.from === null ? undefined : parse(o.from, `${b.where}.ranges[${i}].from`),
      to: o.to === undefined || o.to === null ? undefined : parse(o.to, `${b.where}.ranges[${i}].to`),
    };
  });
  // ES 5.6 answers the ranges sorted by from, then to.
  ranges.sort((x, y) => (x.from ?? -Infinity) - (y.from ?? -Infinity) || (x.to ?? Infinity) - (y.to ?? Infinity));
  const keyed = body.keyed === true;
  const show = (n: number | undefined): string =>
    n === undefined ? "*" : format ? format.print(n, zone) : javaDouble(n);
  return (docs) => {
    const out = ranges.map((r) => {
      const inside = docs.filter((d) =>
        get(d).some((v) => (r.from === undefined || v >= r.from) && (r.to === undefined || v < r.to)),
      );
      const fields: Output = { key: r.key ?? `${show(r.from)}-${show(r.to)}` };
      if (r.from !== undefined) {
        fields.from = r.from;
        if (format) fields.from_as_string = format.print(r.from, zone);
      }
      if (r.to !== undefined) {
        fields.to = r.to;
        if (format) fields.to_as_string = format.print(r.to, zone);
      }
      return renderBucket(DOCS, { key: fields.key, docs: inside }, fields, b.subs);
    });
    if (!keyed) return { buckets: out };
    const byKey: Output = {};
    for (const o of out) {
      const { key, ...rest } = o;
      byKey[key as string] = rest;
    }
    return { buckets: byKey };
  };
}
