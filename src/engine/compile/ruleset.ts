import type { EvalContext } from "./context.js";
import type { BBox } from "./geo.js";
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
/** Grid cells of 0.1 degree; a rule whose box spans more cells than this is scanned instead. */
const CELL = 0.1;
const MAX_CELLS = 400;
const cellKey = (ix: number, iy: number): number => ix * 4096 + iy;
const cellX = (lon: number): number => Math.floor((lon + 180) / CELL);
const cellY = (lat: number): number => Math.floor((lat + 90) / CELL);

export class RuleSet {
  private readonly indexes: readonly ResourceIndex[];
  private readonly scan: readonly CompiledRule[];
  /** Geofence rules by the grid cells their box covers: a position meets only the rules of its cell. */
  private readonly grid = new Map<number, CompiledRule[]>();
  /** leave/leavePoi rules by the cells of their box, looked up with the previous position. */
  private readonly prevGrid = new Map<number, CompiledRule[]>();
  readonly size: number;

  /** `indexed` false scans every rule: the benchmark's "before". */
  constructor(rules: readonly CompiledRule[], indexed = true) {
    const byResource = new Map<string, CompiledRule[]>();
    const scan: CompiledRule[] = [];
    for (const r of rules) {
      if (indexed && r.index === undefined && r.area !== undefined && this.place(this.grid, r.area, r)) continue;
      // leave: the previous position must have been inside, so the previous position's cell finds it.
      if (indexed && r.index === undefined && r.area === undefined && r.prevArea !== undefined) {
        if (this.place(this.prevGrid, r.prevArea, r)) continue;
      }
      if (r.index === undefined || !indexed) scan.push(r);
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

  private place(grid: Map<number, CompiledRule[]>, area: BBox, r: CompiledRule): boolean {
    const [minLon, minLat, maxLon, maxLat] = area;
    const x0 = cellX(minLon);
    const x1 = cellX(maxLon);
    const y0 = cellY(minLat);
    const y1 = cellY(maxLat);
    if ((x1 - x0 + 1) * (y1 - y0 + 1) > MAX_CELLS) return false;
    for (let x = x0; x <= x1; x++) {
      for (let y = y0; y <= y1; y++) {
        const key = cellKey(x, y);
        const list = grid.get(key);
        if (list) list.push(r);
        else grid.set(key, [r]);
      }
    }
    return true;
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
    if (ctx.hasCur && this.grid.size !== 0) {
      const cell = this.grid.get(cellKey(cellX(ctx.cur[0]), cellY(ctx.cur[1])));
      if (cell !== undefined) for (let j = 0; j < cell.length; j++) if (cell[j]!.test(ctx)) out[n++] = cell[j]!;
    }
    if (ctx.hasPrev && ctx.hasCur && this.prevGrid.size !== 0) {
      const cell = this.prevGrid.get(cellKey(cellX(ctx.prev[0]), cellY(ctx.prev[1])));
      if (cell !== undefined) for (let j = 0; j < cell.length; j++) if (cell[j]!.test(ctx)) out[n++] = cell[j]!;
    }
    const scan = this.scan;
    for (let i = 0; i < scan.length; i++) {
      const r = scan[i]!;
      if (r.test(ctx)) out[n++] = r;
    }
    return n;
  }
}
