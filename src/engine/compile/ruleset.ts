import type { EvalContext } from "./context.js";
import { generatedFunction } from "./expression.js";
import { IN, OUT, type Region } from "./geo.js";
import { always, type CompiledRule, type IndexOp, type Test } from "./rule.js";

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

  /**
   * Four numbers such that a number `v` can match a rule of this index only if `v > gt`,
   * `v >= gte`, `v < lt` or `v <= lte`: the smallest gt and gte constants, the largest lt and lte
   * ones (an empty segment's never passes), and with numeric `eq` constants a gt that every
   * number passes but -Infinity and NaN (constants are finite, so neither equals one).
   */
  glance(): [gt: number, gte: number, lt: number, lte: number] {
    const { values, gtEnd, gteEnd, ltEnd } = this;
    const end = values.length;
    return [
      this.eqNum.size !== 0 ? -Infinity : gtEnd > 0 ? values[0]! : Infinity,
      gteEnd > gtEnd ? values[gtEnd]! : Infinity,
      ltEnd > gteEnd ? values[ltEnd - 1]! : -Infinity,
      end > ltEnd ? values[end - 1]! : -Infinity,
    ];
  }

  /** Rules whose string constant is `v` and whose other expressions match, into `out` from `n`. */
  string(v: string, ctx: EvalContext, out: CompiledRule[], n: number): number {
    return matchAll(this.eqStr.get(v), ctx, out, n);
  }

  /** Rules whose constant comparison holds for `v` and whose other expressions match, into `out` from `n`. */
  number(v: number, ctx: EvalContext, out: CompiledRule[], n: number): number {
    const values = this.values;
    const rules = this.rules;
    const { gtEnd, gteEnd, ltEnd } = this;
    const end = values.length;
    // gt: constants below v; a glance at the smallest rejects the common case without a search.
    if (gtEnd > 0 && values[0]! < v) {
      for (let j = 0, e = bound(values, 0, gtEnd, v, false); j < e; j++) n = matchRest(rules[j]!, ctx, out, n);
    }
    if (gteEnd > gtEnd && values[gtEnd]! <= v) {
      for (let j = gtEnd, e = bound(values, gtEnd, gteEnd, v, true); j < e; j++) n = matchRest(rules[j]!, ctx, out, n);
    }
    // lt: constants above v; a glance at the largest rejects the common case.
    if (ltEnd > gteEnd && values[ltEnd - 1]! > v) {
      for (let j = bound(values, gteEnd, ltEnd, v, true); j < ltEnd; j++) n = matchRest(rules[j]!, ctx, out, n);
    }
    if (end > ltEnd && values[end - 1]! >= v) {
      for (let j = bound(values, ltEnd, end, v, false); j < end; j++) n = matchRest(rules[j]!, ctx, out, n);
    }
    if (this.eqNum.size !== 0) n = matchAll(this.eqNum.get(v), ctx, out, n);
    return n;
  }
}

/** Adds `rule`, whose indexed expression holds, to `out` at `n` when its other expressions match; returns the new count. */
function matchRest(rule: CompiledRule, ctx: EvalContext, out: CompiledRule[], n: number): number {
  // Most indexed rules have no other expression: no call.
  const rest = rule.rest;
  if (rest === always || rest(ctx)) out[n++] = rule;
  return n;
}

function matchAll(list: readonly CompiledRule[] | undefined, ctx: EvalContext, out: CompiledRule[], n: number): number {
  if (list === undefined) return n;
  for (let j = 0; j < list.length; j++) n = matchRest(list[j]!, ctx, out, n);
  return n;
}

/** Grid cells of 0.1 degree; a rule whose box spans more cells than this is scanned instead. */
const CELL = 0.1;
const MAX_CELLS = 400;
const cellKey = (ix: number, iy: number): number => ix * 4096 + iy;
const cellX = (lon: number): number => Math.floor((lon + 180) / CELL);
const cellY = (lat: number): number => Math.floor((lat + 90) / CELL);
/** Subcells per side of a cell (a power of two: a subcell index is exact). */
const SUB = 8;
/** Subcells per cell: the bits of two 32-bit words. */
const SUBS = SUB * SUB;
/** A rule whose box spans at most this many cells is placed by subcell; a larger one by cell (bounded memory). */
const FINE_SPAN = 16;
/** Lists per used cell while the grid is built: one for the rules placed by cell, then one per subcell. */
const LISTS = 1 + SUBS;
/** At most this many cells in a dense slot table (64 KiB). */
const DENSE_MAX = 16_384;

/**
 * Geofence rules by where a position can satisfy them: a sparse grid of 0.1-degree cells, each
 * cut into 8 x 8 subcells. Each rule is listed only where its region does not answer OUT for
 * certain, and marked to match outright where it answers IN for certain and the region is all the
 * rule asks (`areaOnly`): most positions then resolve by reading a list, and only those near a
 * boundary run the precise test. A rule spanning more than FINE_SPAN cells is listed per cell (at
 * most MAX_CELLS of them), so a rule costs at most FINE_SPAN x 64 entries. Lists are in rule order,
 * and so are the matches.
 *
 * What a position reads is kept small, because with 100 thing types in turn the grid is cold in
 * the CPU cache: a bit per subcell (8 bytes a cell, read first: a position in no list stops
 * there), then one code per list that holds its entry when it has one, so most positions read one
 * cold line of the grid, not a list start, a list end and an entry.
 */
class GeoGrid {
  /** Each used cell's slot, by cellKey. */
  private readonly slots = new Map<number, number>();
  /**
   * The same as a dense table over the used cells' range (-1: unused), when that range has at most
   * DENSE_MAX cells (rules of one city or region): an index instead of a hash lookup.
   */
  private readonly table: Int32Array | undefined;
  private readonly x0: number = 0;
  private readonly y0: number = 0;
  private readonly nx: number = 0;
  private readonly ny: number = 0;
  /** Whether some rule is placed per cell: else every cell's own list is empty. */
  private readonly wide: boolean;
  /** Slot s's two words at 2s, 2s + 1: bit k set when subcell k's list or the cell's own list has an entry. */
  private readonly mask: Int32Array;
  /** Subcell k of slot s's list at s * SUBS + k, as a code (see `listCode`). */
  private readonly codes: Int32Array;
  /** The cell's own list (rules placed by cell) of slot s at s, as a code; empty when not `wide`. */
  private readonly cellCodes: Int32Array;
  /** Lists of two entries or more: a list's length, then its entries. An entry is rule index * 2, plus 1 when the rule matches outright there. */
  private readonly lists: Int32Array;
  readonly size: number;

  /** Whether a rule of `region` can be placed: its box spans at most MAX_CELLS cells. */
  static fits(region: Region): boolean {
    const [minLon, minLat, maxLon, maxLat] = region.bbox;
    return (cellX(maxLon) - cellX(minLon) + 1) * (cellY(maxLat) - cellY(minLat) + 1) <= MAX_CELLS;
  }

  /**
   * Places `rules` (each of which `fits`) by their `area`, or with `prev` by their `prevArea` (leave
   * rules, found by the previous position, never match outright: the position must be outside too).
   */
  constructor(
    private readonly rules: readonly CompiledRule[],
    prev: boolean,
  ) {
    // (list, entry) pairs in rule order, then laid out list by list (a stable counting sort). List
    // s * LISTS is cell s's own (rules placed by cell), s * LISTS + 1 + k its subcell k's.
    const pairLists: number[] = [];
    const pairEntries: number[] = [];
    let wide = false;
    const slotOf = (key: number): number => {
      let s = this.slots.get(key);
      if (s === undefined) this.slots.set(key, (s = this.slots.size));
      return s;
    };
    rules.forEach((r, i) => {
      const matchIn = !prev && r.areaOnly ? 1 : 0;
      const add = (list: number, answer: number): void => {
        pairLists.push(list);
        pairEntries.push(i * 2 + (answer === IN ? matchIn : 0));
      };
      const region = prev ? r.prevArea! : r.area!;
      const [minLon, minLat, maxLon, maxLat] = region.bbox;
      const x0 = cellX(minLon);
      const x1 = cellX(maxLon);
      const y0 = cellY(minLat);
      const y1 = cellY(maxLat);
      const nx = x1 - x0 + 1;
      const ny = y1 - y0 + 1;
      if (nx * ny > FINE_SPAN) {
        const cells = region.grid(x0 * CELL - 180, y0 * CELL - 90, CELL, CELL, nx, ny);
        for (let y = 0; y < ny; y++)
          for (let x = 0; x < nx; x++) {
            const answer = cells[x + y * nx]!;
            if (answer !== OUT) add(slotOf(cellKey(x0 + x, y0 + y)) * LISTS, answer);
          }
        wide = true;
        return;
      }
      const cells = region.grid(x0 * CELL - 180, y0 * CELL - 90, CELL / SUB, CELL / SUB, nx * SUB, ny * SUB);
      for (let y = 0; y < ny; y++)
        for (let x = 0; x < nx; x++) {
          let base = -1;
          for (let sy = 0; sy < SUB; sy++)
            for (let sx = 0; sx < SUB; sx++) {
              const answer = cells[x * SUB + sx + (y * SUB + sy) * nx * SUB]!;
              if (answer === OUT) continue;
              if (base < 0) base = slotOf(cellKey(x0 + x, y0 + y)) * LISTS;
              add(base + 1 + sx + sy * SUB, answer);
            }
        }
    });
    const slotCount = this.slots.size;
    const start = new Int32Array(slotCount * LISTS + 1);
    for (const l of pairLists) start[l + 1]!++;
    for (let l = 1; l < start.length; l++) start[l]! += start[l - 1]!;
    const next = start.slice(0, -1);
    const entries = new Int32Array(pairLists.length);
    for (let k = 0; k < pairLists.length; k++) entries[next[pairLists[k]!]!++] = pairEntries[k]!;
    // Each list as one number: 0 empty, e + 1 its one entry e, -o the entries lists[o .. o + lists[o - 1]).
    const long: number[] = [];
    const listCode = (list: number): number => {
      const from = start[list]!;
      const length = start[list + 1]! - from;
      if (length === 0) return 0;
      if (length === 1) return entries[from]! + 1;
      long.push(length);
      const o = long.length;
      for (let k = 0; k < length; k++) long.push(entries[from + k]!);
      return -o;
    };
    this.codes = new Int32Array(slotCount * SUBS);
    this.cellCodes = new Int32Array(wide ? slotCount : 0);
    this.mask = new Int32Array(slotCount * 2);
    for (let s = 0; s < slotCount; s++) {
      const own = listCode(s * LISTS);
      if (wide) this.cellCodes[s] = own;
      for (let k = 0; k < SUBS; k++) {
        const code = listCode(s * LISTS + 1 + k);
        this.codes[s * SUBS + k] = code;
        if (code !== 0 || own !== 0) this.mask[s * 2 + (k >> 5)]! |= 1 << (k & 31);
      }
    }
    this.lists = Int32Array.from(long);
    this.size = slotCount;
    this.wide = wide;
    const keys = [...this.slots.keys()];
    const xs = keys.map((k) => Math.floor(k / 4096));
    const ys = keys.map((k) => k % 4096);
    // A loop, not Math.min(...xs): rules may use hundreds of thousands of cells, past what a call's arguments hold.
    let [minX, maxX, minY, maxY] = [Infinity, -Infinity, Infinity, -Infinity];
    for (let k = 0; k < keys.length; k++) {
      minX = Math.min(minX, xs[k]!);
      maxX = Math.max(maxX, xs[k]!);
      minY = Math.min(minY, ys[k]!);
      maxY = Math.max(maxY, ys[k]!);
    }
    this.x0 = minX;
    this.y0 = minY;
    this.nx = maxX - minX + 1;
    this.ny = maxY - minY + 1;
    if (keys.length > 0 && this.nx * this.ny <= DENSE_MAX) {
      this.table = new Int32Array(this.nx * this.ny).fill(-1);
      for (const slot of this.slots.values()) this.table[(xs[slot]! - this.x0) * this.ny + ys[slot]! - this.y0] = slot;
    }
  }

  /** The listed rules that match at (lon, lat) into `out` from `n`; returns the new count. */
  matches(lon: number, lat: number, ctx: EvalContext, out: CompiledRule[], n: number): number {
    const u = (lon + 180) / CELL;
    const v = (lat + 90) / CELL;
    const ix = Math.floor(u);
    const iy = Math.floor(v);
    let slot: number;
    const table = this.table;
    if (table !== undefined) {
      const dx = ix - this.x0;
      const dy = iy - this.y0;
      if (dx < 0 || dx >= this.nx || dy < 0 || dy >= this.ny) return n;
      slot = table[dx * this.ny + dy]!;
      if (slot < 0) return n;
    } else {
      const s = this.slots.get(cellKey(ix, iy));
      if (s === undefined) return n;
      slot = s;
    }
    // u - ix is exact and below 1, and SUB a power of two: the subcell index is below SUB.
    const k = (((u - ix) * SUB) | 0) + (((v - iy) * SUB) | 0) * SUB;
    if ((this.mask[slot * 2 + (k >> 5)]! & (1 << (k & 31))) === 0) return n;
    const b = this.codes[slot * SUBS + k]!;
    const rules = this.rules;
    if (!this.wide) {
      if (b > 0) {
        const r = rules[(b - 1) >> 1]!;
        if (((b - 1) & 1) === 1 || r.test(ctx)) out[n++] = r;
        return n;
      }
      const lists = this.lists;
      for (let j = -b, end = j + lists[j - 1]!; j < end; j++) {
        const e = lists[j]!;
        const r = rules[e >> 1]!;
        if ((e & 1) === 1 || r.test(ctx)) out[n++] = r;
      }
      return n;
    }
    // The two lists merged by rule index: matches come in rule order.
    const a = this.cellCodes[slot]!;
    const aLength = codeLength(this.lists, a);
    const bLength = codeLength(this.lists, b);
    let i = 0;
    let j = 0;
    while (i < aLength || j < bLength) {
      const ea = i < aLength ? codeEntry(this.lists, a, i) : 0;
      const eb = j < bLength ? codeEntry(this.lists, b, j) : 0;
      let e: number;
      if (j >= bLength || (i < aLength && ea < eb)) {
        e = ea;
        i++;
      } else {
        e = eb;
        j++;
      }
      const r = rules[e >> 1]!;
      if ((e & 1) === 1 || r.test(ctx)) out[n++] = r;
    }
    return n;
  }
}

/** How many entries the list of `code` has (see GeoGrid's `listCode`). */
function codeLength(lists: Int32Array, code: number): number {
  return code === 0 ? 0 : code > 0 ? 1 : lists[-code - 1]!;
}

/** Entry `k` of the list of `code`. */
function codeEntry(lists: Int32Array, code: number, k: number): number {
  return code > 0 ? code - 1 : lists[-code + k]!;
}

type IndexMatcher = (
  os: Record<string, unknown>,
  glance: Float64Array,
  indexes: readonly ResourceIndex[],
  ctx: EvalContext,
  out: CompiledRule[],
  n: number,
) => number;

/**
 * The lookup of every index of a rule set as one generated function: each resource read by its
 * name (an inline cache per resource, where a loop over the names is one megamorphic keyed load),
 * a number checked against the set's glance array, a string or boolean looked up only where the
 * index has string constants. The text depends on the resources' names and kinds alone, so rule
 * sets over the same resources (the thing types of one kind of device) share one function, which
 * V8 compiles and optimizes once. Names are quoted with JSON.stringify.
 */
function indexMatcher(indexes: readonly ResourceIndex[]): IndexMatcher {
  const lines = indexes.map((ix, i) => {
    const g = i * 4;
    let code =
      `v = os[${JSON.stringify(ix.resource)}];\n` +
      `if (typeof v === "number") { if (v > g[${g}] || v >= g[${g + 1}] || v < g[${g + 2}] || v <= g[${g + 3}]) n = ix[${i}].number(v, ctx, out, n); }\n`;
    if (ix.eqStr.size !== 0)
      code +=
        `else if (typeof v === "string") n = ix[${i}].string(v, ctx, out, n);\n` +
        `else if (typeof v === "boolean") n = ix[${i}].string(v ? "true" : "false", ctx, out, n);\n`;
    return code;
  });
  return generatedFunction<IndexMatcher>(
    `return function indexes(os, g, ix, ctx, out, n) {\nlet v;\n${lines.join("")}return n;\n};`,
  );
}

/**
 * The rules of one thing type (or of one thing), arranged so that an
 * observation meets only rules that can match it: rules comparing one of the
 * thing's resources with a constant sit in sorted arrays and are found by
 * binary search on the observed value; geofence rules sit in a spatial grid
 * (GeoGrid); the others are scanned.
 */
export class RuleSet {
  private readonly indexes: readonly ResourceIndex[];
  /**
   * Per index, four numbers side by side (see `glanceOf`): a number passing none of the four
   * comparisons matches none of the index's rules, so an observation that meets none of them (the
   * common case) reads this one small array, not each index and its constants.
   */
  private readonly glance: Float64Array;
  /** Every index's lookup for the observation's values (see `indexMatcher`). */
  private readonly indexMatch: IndexMatcher;
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
  /** Geofence rules by where the position can satisfy them: a position meets only the rules of its subcell. */
  private readonly grid: GeoGrid | undefined;
  /** leave/leavePoi rules by where the previous position can satisfy them, looked up with the previous position. */
  private readonly prevGrid: GeoGrid | undefined;
  readonly size: number;

  /** `indexed` false scans every rule: the benchmark's "before". */
  constructor(rules: readonly CompiledRule[], indexed = true) {
    const byResource = new Map<string, CompiledRule[]>();
    const scan: CompiledRule[] = [];
    const placed: CompiledRule[] = [];
    const prevPlaced: CompiledRule[] = [];
    for (const r of rules) {
      if (indexed && r.index === undefined && r.area !== undefined && GeoGrid.fits(r.area)) {
        placed.push(r);
        continue;
      }
      // leave: the previous position must have been inside, so the previous position's cell finds it.
      if (indexed && r.index === undefined && r.area === undefined && r.prevArea !== undefined) {
        if (GeoGrid.fits(r.prevArea)) {
          prevPlaced.push(r);
          continue;
        }
      }
      if (r.index === undefined || !indexed) scan.push(r);
      else {
        const list = byResource.get(r.index.resource);
        if (list) list.push(r);
        else byResource.set(r.index.resource, [r]);
      }
    }
    this.grid = placed.length === 0 ? undefined : new GeoGrid(placed, false);
    this.prevGrid = prevPlaced.length === 0 ? undefined : new GeoGrid(prevPlaced, true);
    this.indexes = [...byResource].map(([resource, list]) => new ResourceIndex(resource, list));
    this.glance = Float64Array.from(this.indexes.flatMap((ix) => ix.glance()));
    this.indexMatch = indexMatcher(this.indexes);
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

  /**
   * Puts every rule whose expressions all match into `out` (from index 0)
   * and returns how many; `out` is the caller's reusable array.
   * `applicable` counts the rules that were actually tested, for the benchmark.
   */
  matches(ctx: EvalContext, out: CompiledRule[]): number {
    let n = 0;
    const os = ctx.os;
    if (this.indexes.length !== 0) n = this.indexMatch(os, this.glance, this.indexes, ctx, out, n);
    if (ctx.hasCur && this.grid !== undefined) n = this.grid.matches(ctx.cur[0], ctx.cur[1], ctx, out, n);
    if (ctx.hasPrev && ctx.hasCur && this.prevGrid !== undefined)
      n = this.prevGrid.matches(ctx.prev[0], ctx.prev[1], ctx, out, n);
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
    let any = 0;
    for (let k = 0; k < tests.length; k++) any |= hits[k] = tests[k]!(ctx) ? 1 : 0;
    // Most observations pass none of the tests: no walk over the rules.
    if (any === 0) return n;
    const testOf = this.scanTestOf;
    for (let i = 0; i < scan.length; i++) if (hits[testOf[i]!] === 1) out[n++] = scan[i]!;
    return n;
  }
}
