import type { EvalContext } from "./context.js";
import type { BBox } from "./geo.js";
import type { CompiledRule, IndexOp, Test } from "./rule.js";

/** First index in [lo, hi) whose value is >= v (strict: > v). */
function bound(values: Float64Array, lo: number, hi: number, v: number, strict: boolean): number {
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (strict ? values[mid]! <= v : values[mid]! < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * The constant comparisons of one resource: gt, gte, lt and lte constants
 * each sorted ascending, laid out one after the other in ONE array (and
 * their rules in the same order in one list), so an observation reads a few
 * adjacent numbers instead of four separate arrays per resource: with 100
 * thing types in turn, what the CPU cache has to bring in is what costs.
 */
class ResourceIndex {
  readonly values: Float64Array;
  readonly rules: readonly CompiledRule[];
  /** Segment ends: gt is [0, gtEnd), gte [gtEnd, gteEnd), lt [gteEnd, ltEnd), lte [ltEnd, values.length). */
  readonly gtEnd: number;
  readonly gteEnd: number;
  readonly ltEnd: number;
  readonly eqNum = new Map<number, CompiledRule[]>();
  readonly eqStr = new Map<string, CompiledRule[]>();

  constructor(
    readonly resource: string,
    rules: CompiledRule[],
  ) {
    const sorted = (op: IndexOp): CompiledRule[] =>
      rules
        .filter((r) => r.index!.op === op && typeof r.index!.value === "number")
        .sort((a, b) => (a.index!.value as number) - (b.index!.value as number));
    const gt = sorted("gt");
    const gte = sorted("gte");
    const lt = sorted("lt");
    const lte = sorted("lte");
    this.rules = [...gt, ...gte, ...lt, ...lte];
    this.values = Float64Array.from(this.rules, (r) => r.index!.value as number);
    this.gtEnd = gt.length;
    this.gteEnd = this.gtEnd + gte.length;
    this.ltEnd = this.gteEnd + lt.length;
    for (const r of rules) {
      if (r.index!.op !== "eq") continue;
      const v = r.index!.value;
      const map = (typeof v === "number" ? this.eqNum : this.eqStr) as Map<number | string, CompiledRule[]>;
      const list = map.get(v);
      if (list) list.push(r);
      else map.set(v, [r]);
    }
  }

  /** Rules whose constant comparison holds for `v` and whose other expressions match, into `out` from `n`. */
  number(v: number, ctx: EvalContext, out: CompiledRule[], n: number): number {
    const values = this.values;
    const rules = this.rules;
    const { gtEnd, gteEnd, ltEnd } = this;
    const end = values.length;
    // gt: constants below v; a glance at the smallest rejects the common case without a search.
    if (gtEnd > 0 && values[0]! < v) {
      for (let j = 0, e = bound(values, 0, gtEnd, v, false); j < e; j++) if (rules[j]!.rest(ctx)) out[n++] = rules[j]!;
    }
    if (gteEnd > gtEnd && values[gtEnd]! <= v) {
      for (let j = gtEnd, e = bound(values, gtEnd, gteEnd, v, true); j < e; j++)
        if (rules[j]!.rest(ctx)) out[n++] = rules[j]!;
    }
    // lt: constants above v; a glance at the largest rejects the common case.
    if (ltEnd > gteEnd && values[ltEnd - 1]! > v) {
      for (let j = bound(values, gteEnd, ltEnd, v, true); j < ltEnd; j++) if (rules[j]!.rest(ctx)) out[n++] = rules[j]!;
    }
    if (end > ltEnd && values[end - 1]! >= v) {
      for (let j = bound(values, ltEnd, end, v, false); j < end; j++) if (rules[j]!.rest(ctx)) out[n++] = rules[j]!;
    }
    if (this.eqNum.size !== 0) n = matchAll(this.eqNum.get(v), ctx, out, n);
    return n;
  }
}

function matchAll(list: readonly CompiledRule[] | undefined, ctx: EvalContext, out: CompiledRule[], n: number): number {
  if (list === undefined) return n;
  for (let j = 0; j < list.length; j++) if (list[j]!.rest(ctx)) out[n++] = list[j]!;
  return n;
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
  /**
   * The scanned rules' distinct tests, when some rules share one (a `${...}` comparison is one
   * generated function for every rule with the same text: `temp > ${thing.state.temp + 800}` in
   * five rules is one test), and each scanned rule's test among them: an observation runs each
   * distinct test once. Tests read only the context, so one run answers for every rule sharing it.
   * Undefined when every test is the rule's own.
   */
  private readonly scanTests: readonly Test[] | undefined;
  private readonly scanTestOf: Int32Array;
  /** Each distinct test's answer for the current observation, reused. */
  private readonly scanHits: Uint8Array;
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
    const distinct = new Map<Test, number>();
    this.scanTestOf = Int32Array.from(scan, (r) => {
      let k = distinct.get(r.test);
      if (k === undefined) distinct.set(r.test, (k = distinct.size));
      return k;
    });
    this.scanTests = distinct.size < scan.length ? [...distinct.keys()] : undefined;
    this.scanHits = new Uint8Array(distinct.size);
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
      if (typeof v === "number") n = ix.number(v, ctx, out, n);
      else if (typeof v === "string" && ix.eqStr.size !== 0) n = matchAll(ix.eqStr.get(v), ctx, out, n);
      else if (typeof v === "boolean" && ix.eqStr.size !== 0) n = matchAll(ix.eqStr.get(String(v)), ctx, out, n);
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
    const tests = this.scanTests;
    if (tests === undefined) {
      for (let i = 0; i < scan.length; i++) {
        const r = scan[i]!;
        if (r.test(ctx)) out[n++] = r;
      }
      return n;
    }
    const hits = this.scanHits;
    for (let k = 0; k < tests.length; k++) hits[k] = tests[k]!(ctx) ? 1 : 0;
    const testOf = this.scanTestOf;
    for (let i = 0; i < scan.length; i++) if (hits[testOf[i]!] === 1) out[n++] = scan[i]!;
    return n;
  }
}
