/**
 * Aggregations: compiled once per request, run over the matching documents.
 * Metrics (metrics/) and buckets (buckets/) are builders of one shape
 * (types.ts); this face compiles a request's tree of them.
 */
import { badQuery, objectAt, own, type Json } from "../errors.js";
import type { Doc } from "../fields.js";
import { FIND_LIMITS, overLimit } from "../limits.js";
import { BUCKET_BUILDERS } from "./buckets/index.js";
import { METRIC_BUILDERS } from "./metrics/index.js";
import type { Agg, AggContext, Builder, Output } from "./types.js";

export type { Agg, AggContext, SearchFacts } from "./types.js";

const BUILDERS: Record<string, Builder> = { ...METRIC_BUILDERS, ...BUCKET_BUILDERS };

/** Compiles the `aggs`/`aggregations` object of a request or of a bucket aggregation. */
export function compileAggs(spec: unknown, ctx: AggContext, where = "aggs"): Agg[] {
  if (spec === undefined) return [];
  const o = objectAt(spec, where);
  const depth = (ctx.depth ?? 0) + 1;
  if (depth > FIND_LIMITS.aggregationDepth)
    throw overLimit(`[${where}] aggregations nest too deep`, FIND_LIMITS.aggregationDepth);
  const inner = { ...ctx, depth };
  return Object.entries(o).map(([name, def]) => compileAgg(name, objectAt(def, `${where}.${name}`), inner));
}

function compileAgg(name: string, def: Json, ctx: AggContext): Agg {
  const subSpec = def.aggs ?? def.aggregations;
  const kinds = Object.keys(def).filter((k) => k !== "aggs" && k !== "aggregations" && k !== "meta");
  if (kinds.length !== 1) throw badQuery(`[aggs.${name}] must hold exactly one aggregation type`);
  const kind = kinds[0]!;
  const body = def[kind];
  ctx.budget.addAggregation();
  const where = `aggs.${name}.${kind}`;
  if (kind === "global") throw badQuery(`[${where}] global aggregations are not allowed`);
  const subs = compileAggs(subSpec, ctx, `aggs.${name}.aggs`);
  const make = own(BUILDERS, kind);
  if (!make) throw badQuery(`unsupported aggregation [${kind}] in [aggs.${name}]`);
  if (own(METRIC_BUILDERS, kind) && subs.length > 0) throw badQuery(`[${where}] cannot hold sub-aggregations`);
  const answer = make(objectAt(body, where), { ctx, subs, where });
  const meta = def.meta;
  const budget = ctx.budget;
  // Buckets are counted as each aggregation answers, so an explosion at depth stops early.
  const counted = (out: Output): Output => {
    const buckets = out.buckets;
    if (buckets) budget.addBuckets(Array.isArray(buckets) ? buckets.length : Object.keys(buckets).length);
    return meta === undefined ? out : { meta, ...out };
  };
  const rows = answer.rows;
  return {
    name,
    run: (docs: Doc[]) => {
      budget.tick();
      return counted(answer(docs));
    },
    rows:
      rows && subs.every((s) => s.rows)
        ? (set) => {
            budget.tick();
            return counted(rows(set));
          }
        : undefined,
  };
}
