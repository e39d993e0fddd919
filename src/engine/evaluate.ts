import { EvalContext, readGeoPoint, type CompiledRule } from "./compile/index.js";
import type { NestedObservation } from "./types.js";

export interface DryRunInput {
  /** This observation's state and nested objects. */
  observation: { state: Record<string, unknown>; nested?: NestedObservation[] };
  /** The thing's state before it (`thing.state.*`, previous position for enter/leave). */
  thing?: { state: Record<string, unknown>; nested?: NestedObservation[] };
}

export interface DryRunResult {
  /** Every expression matched: the threshold would count this observation. */
  matched: boolean;
  expressions: { operator: string; resource: string; matched: boolean }[];
}

/**
 * Evaluates one compiled rule against one observation and a given previous
 * state, with no side effect: no threshold, no state, no action. For the
 * rules dry-run (`POST /rules/test`).
 */
export function evaluateRule(rule: CompiledRule, input: DryRunInput): DryRunResult {
  const ctx = new EvalContext();
  ctx.os = input.observation.state ?? {};
  ctx.on = input.observation.nested;
  ctx.ts = input.thing?.state ?? {};
  ctx.tn = input.thing?.nested;
  ctx.hasCur = ctx.os.latlng !== undefined && readGeoPoint(ctx.os.latlng, ctx.cur);
  ctx.hasPrev = ctx.ts.latlng !== undefined && readGeoPoint(ctx.ts.latlng, ctx.prev);
  const expressions = rule.rule.expression.map((item) => {
    const compiled = rule.expressions.find((e) => e.item === item)!;
    return { operator: item.operator, resource: item.resource, matched: compiled.test(ctx) };
  });
  return { matched: expressions.every((e) => e.matched), expressions };
}
