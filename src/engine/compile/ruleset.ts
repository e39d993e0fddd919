import type { EvalContext } from "./context.js";
import type { CompiledRule, IndexOp } from "./rule.js";

/** Constants of one operator on one resource, ascending, with their rules in the same order. */
class Sorted {
  readonly values: Float64Array;
  readonly rules: readonly CompiledRule[];

  constructor(rules: CompiledRule[]) {
    rules.sort((a, b) => (a.index!.value as number) - (b.index!.value as number));
    this.rules = rules;
    this.values = Float64Array.from(rules, (r) => r.index!.value as number);
  }
}

/** First index whose value is >= v (strict: > v). */
function bound(values: Float64Array, v: number, strict: boolean): number {
  let lo = 0;
  let hi = values.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (strict ? values[mid]! <= v : values[mid]! < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

class ResourceIndex {
  readonly gt: Sorted;
  readonly gte: Sorted;
  readonly lt: Sorted;
  readonly lte: Sorted;
  readonly eqNum = new Map<number, CompiledRule[]>();
  readonly eqStr = new Map<string, CompiledRule[]>();

  constructor(
    readonly resource: string,
    rules: CompiledRule[],
  ) {
    const by = (op: IndexOp, kind: "number" | "string"): CompiledRule[] =>
      rules.filter((r) => r.index!.op === op && typeof r.index!.value === kind);
    this.gt = new Sorted(by("gt", "number"));
    this.gte = new Sorted(by("gte", "number"));
    this.lt = new Sorted(by("lt", "number"));
    this.lte = new Sorted(by("lte", "number"));
    for (const r of rules) {
      if (r.index!.op !== "eq") continue;
      const v = r.index!.value;
      const map = (typeof v === "number" ? this.eqNum : this.eqStr) as Map<number | string, CompiledRule[]>;
      const list = map.get(v);
      if (list) list.push(r);
      else map.set(v, [r]);
    }
  }
}

/**
 * The rules of one thing type (or of one thing), arranged so that an
 * observation meets only rules that can match it: rules comparing one of the
 * thing's resources with a constant sit in sorted arrays and are found by
 * binary search on the observed value; the others are scanned.
 */
export class RuleSet {
  private readonly indexes: readonly ResourceIndex[];
  private readonly scan: readonly CompiledRule[];
  readonly size: number;

  constructor(rules: readonly CompiledRule[]) {
    const byResource = new Map<string, CompiledRule[]>();
    const scan: CompiledRule[] = [];
    for (const r of rules) {
      if (r.index === undefined) scan.push(r);
      else {
        const list = byResource.get(r.index.resource);
        if (list) list.push(r);
        else byResource.set(r.index.resource, [r]);
      }
    }
    this.indexes = [...byResource].map(([resource, list]) => new ResourceIndex(resource, list));
    this.scan = scan;
    this.size = rules.length;
  }

  /**
   * Puts every rule whose expressions all match into `out` (from index 0)
   * and returns how many; `out` is the caller's reusable array.
   * `applicable` counts the rules that were actually tested, for the benchmark.
   */
  matches(ctx: EvalContext, out: CompiledRule[]): number {
    let n = 0;
    const os = ctx.os;
    for (let i = 0; i < this.indexes.length; i++) {
      const ix = this.indexes[i]!;
      const v = os[ix.resource];
      if (typeof v === "number") {
        const gt = ix.gt;
        for (let j = 0, end = bound(gt.values, v, false); j < end; j++) {
          const r = gt.rules[j]!;
          if (r.rest(ctx)) out[n++] = r;
        }
        const gte = ix.gte;
        for (let j = 0, end = bound(gte.values, v, true); j < end; j++) {
          const r = gte.rules[j]!;
          if (r.rest(ctx)) out[n++] = r;
        }
        const lt = ix.lt;
        for (let j = bound(lt.values, v, true); j < lt.values.length; j++) {
          const r = lt.rules[j]!;
          if (r.rest(ctx)) out[n++] = r;
        }
        const lte = ix.lte;
        for (let j = bound(lte.values, v, false); j < lte.values.length; j++) {
          const r = lte.rules[j]!;
          if (r.rest(ctx)) out[n++] = r;
        }
        const eq = ix.eqNum.size === 0 ? undefined : ix.eqNum.get(v);
        if (eq !== undefined) for (let j = 0; j < eq.length; j++) if (eq[j]!.rest(ctx)) out[n++] = eq[j]!;
      } else if (typeof v === "string" && ix.eqStr.size !== 0) {
        const eq = ix.eqStr.get(v);
        if (eq !== undefined) for (let j = 0; j < eq.length; j++) if (eq[j]!.rest(ctx)) out[n++] = eq[j]!;
      } else if (typeof v === "boolean" && ix.eqStr.size !== 0) {
        const eq = ix.eqStr.get(String(v));
        if (eq !== undefined) for (let j = 0; j < eq.length; j++) if (eq[j]!.rest(ctx)) out[n++] = eq[j]!;
      }
    }
    const scan = this.scan;
    for (let i = 0; i < scan.length; i++) {
      const r = scan[i]!;
      if (r.test(ctx)) out[n++] = r;
    }
    return n;
  }
}
