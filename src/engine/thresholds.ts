import type { CompiledRule, EvalContext, RuleSet } from "./compile/index.js";
import type { RuleIndex } from "./rule-index.js";
import type { ThresholdState } from "./state/index.js";
import type { Runtime } from "./runtimes.js";
import {
  COUNT,
  EntryPool,
  F64,
  FIRST_BLOCK,
  LAST_FIRED,
  LAST_SEQ,
  SLOT,
  UNVERSIONED,
  VERSION,
  WORDS,
  type Block,
  type EntryKeeper,
} from "./threshold-pool.js";

/**
 * Threshold counting: per (rule, thing), consecutive matching observations of the thing, and the
 * rules that reached their count (and interval) with this observation. While the engine holds a
 * thing, its entries are numbers in the thing's block of a shared pool (`threshold-pool.ts`): the
 * rule by its dense number, count, lastSeq, lastFiredAt, version. `ThingState.thresholds` (the
 * stores' shape) is what `entries` makes of a block when a checkpoint writes the thing, when the
 * engine forgets it and for `thingState`; `adopt` takes a stored list in on first sight.
 *
 * An entry that no longer matters (see `prune`) is made inert in place (count 0, never fired:
 * exactly what no entry means) rather than removed, and the next rule that needs an entry for the
 * thing takes it over (`settle`, after the prune). A block keeps its entries (the most rules live
 * for the thing at once) and grows by moving to a block twice its size.
 */
export class Thresholds implements EntryKeeper {
  /** The rules that fired for the current observation, `count` of them (see `count`). */
  readonly fired: CompiledRule[] = [];
  /** Rule matches counted since `reset` (all expressions true), for the benchmark. */
  matches = 0;
  readonly pool: EntryPool;
  private readonly matched: CompiledRule[] = [];
  /** Rules that matched the current observation with no entry for the thing: `settle` makes theirs. */
  private readonly fresh: CompiledRule[] = [];
  private freshCount = 0;

  constructor(
    private readonly rules: RuleIndex,
    pool?: EntryPool,
  ) {
    this.pool = pool ?? new EntryPool();
  }

  /**
   * Counts the rules of `set` that match the observation in `ctx` for the thing `rt` (its `seq`-th
   * observation): those that reach their threshold are added to `fired` from index `fired` on.
   * Returns the new number of fired rules. A matching rule without an entry for the thing is
   * counted here (a fresh entry's count is 1: it fires when the rule's count is 1) but its entry is
   * only made by `settle`, after the `prune`: it then takes over an entry this observation ended
   * instead of growing the thing's block.
   */
  count(set: RuleSet, ctx: EvalContext, rt: Runtime, seq: number, now: number, fired: number): number {
    const matched = this.matched;
    const n = set.matches(ctx, matched);
    if (n === 0) return fired;
    const domains = rt.domains;
    const own = rt.domain;
    const { i32, u32, f64 } = this.pool.chunks[rt.tk]!;
    const first = rt.tb;
    const end = first + rt.tn;
    for (let i = 0; i < n; i++) {
      const rule = matched[i]!;
      if (rule.domain !== own && !domains.has(rule.domain)) continue;
      this.matches++;
      rt.armed++;
      const slot = rule.slot;
      let e = first;
      while (e < end && i32[e * WORDS + SLOT] !== slot) e++;
      if (e === end) {
        // What a new entry would hold: count 1, fired at once when the rule's count is 1.
        this.fresh[this.freshCount++] = rule;
        if (rule.count <= 1) this.fired[fired++] = rule;
        continue;
      }
      const w = e * WORDS;
      const d = e * F64;
      if (i32[w + UNVERSIONED] !== 0) {
        // An entry from before versions existed has none: it keeps its count, as it always has.
        i32[w + UNVERSIONED] = 0;
        u32[w + VERSION] = rule.version;
      } else if (u32[w + VERSION] !== rule.version) {
        // Counted under the rule's previous conditions (kept in the database while the rule changed).
        u32[w + VERSION] = rule.version;
        i32[w + COUNT] = 0;
        f64[d + LAST_FIRED] = 0;
        f64[d + LAST_SEQ] = -1;
      }
      // Consecutive: the previous observation of this thing matched too; anything else started over.
      const count = f64[d + LAST_SEQ] === seq - 1 ? i32[w + COUNT]! + 1 : 1;
      f64[d + LAST_SEQ] = seq;
      const lastFiredAt = f64[d + LAST_FIRED]!;
      if (count >= rule.count && (lastFiredAt === 0 || now - lastFiredAt >= rule.intervalMs)) {
        i32[w + COUNT] = 0;
        // Only an interval needs the time; without one the entry is inert again.
        f64[d + LAST_FIRED] = rule.intervalMs > 0 ? now : 0;
        this.fired[fired++] = rule;
      } else i32[w + COUNT] = count;
    }
    return fired;
  }

  /**
   * Makes the entries of the rules `count` found without one (after `prune`, so that they take over
   * the entries it made inert): each as a new entry would be after one match. Returns how many of
   * them are live.
   */
  settle(rt: Block, seq: number, now: number): number {
    const k = this.freshCount;
    if (k === 0) return 0;
    this.freshCount = 0;
    let live = 0;
    let e = rt.tb;
    let { i32, u32, f64 } = this.pool.chunks[rt.tk]!;
    for (let f = 0; f < k; f++) {
      const rule = this.fresh[f]!;
      // Not past the entry just made: when it is inert (count 1 fired at once, no interval), the
      // next rule takes it over, as it would any other inert entry.
      const end = rt.tb + rt.tn;
      while (e < end && (i32[e * WORDS + COUNT]! > 0 || f64[e * F64 + LAST_FIRED] !== 0)) e++;
      if (e === end) {
        if (rt.tn === rt.tc) {
          this.grow(rt);
          ({ i32, u32, f64 } = this.pool.chunks[rt.tk]!);
        }
        e = rt.tb + rt.tn;
        rt.tn++;
      }
      const w = e * WORDS;
      const d = e * F64;
      i32[w + SLOT] = rule.slot;
      u32[w + VERSION] = rule.version;
      i32[w + UNVERSIONED] = 0;
      f64[d + LAST_SEQ] = seq;
      if (rule.count <= 1) {
        i32[w + COUNT] = 0;
        const at = rule.intervalMs > 0 ? now : 0;
        f64[d + LAST_FIRED] = at;
        if (at !== 0) live++;
      } else {
        i32[w + COUNT] = 1;
        f64[d + LAST_FIRED] = 0;
        live++;
      }
    }
    return live;
  }

  /**
   * Keeps only thresholds that matter: a count this observation continued, a
   * count this observation does not concern (it carries none of the rule's
   * resources: it neither matches nor resets, so the count goes on as if it
   * had not been seen), or a firing whose interval has not passed. Everything
   * else equals no entry, and is made inert. Only live entries pay the concern
   * test: a rule at count 0 has nothing to reset. Returns how many entries are live after it.
   */
  prune(rt: Block, ctx: EvalContext, seq: number, now: number): number {
    const { i32, f64 } = this.pool.chunks[rt.tk]!;
    let live = 0;
    // Whether the observation carries every resource any rule names (asked once, when a count
    // needs it): then it concerns every rule, and a count it did not continue ends without
    // looking its rule up (the usual case: devices that report their whole state).
    let concernsAll: boolean | undefined;
    const end = rt.tb + rt.tn;
    for (let e = rt.tb; e < end; e++) {
      const w = e * WORDS;
      const d = e * F64;
      if (i32[w + COUNT]! > 0) {
        const lastSeq = f64[d + LAST_SEQ];
        if (lastSeq === seq) {
          live++;
          continue;
        }
        if (lastSeq === seq - 1 && !(concernsAll ??= this.rules.concernsAll(ctx))) {
          const rule = this.rules.ruleAt(i32[w + SLOT]!);
          if (rule !== undefined && !rule.concerns(ctx)) {
            f64[d + LAST_SEQ] = seq;
            live++;
            continue;
          }
        }
        i32[w + COUNT] = 0;
      }
      const lastFiredAt = f64[d + LAST_FIRED]!;
      if (lastFiredAt !== 0) {
        const rule = this.rules.ruleAt(i32[w + SLOT]!);
        if (rule === undefined || now - lastFiredAt >= rule.intervalMs) f64[d + LAST_FIRED] = 0;
        else live++;
      }
    }
    return live;
  }

  /**
   * Takes a stored list (`ThingState.thresholds`, the object form) into the thing's block, in its
   * order, inert entries too; the thing must have no block. Returns how many entries it took.
   */
  adopt(rt: Block, list: readonly ThresholdState[] | undefined): number {
    if (list === undefined) {
      rt.tc = 0;
      rt.tn = 0;
      return 0;
    }
    let size = FIRST_BLOCK;
    while (size < list.length) size *= 2;
    rt.tb = this.pool.alloc(size);
    rt.tk = this.pool.chunk;
    rt.tc = size;
    rt.tn = list.length;
    const { i32, u32, f64 } = this.pool.chunks[rt.tk]!;
    for (let j = 0; j < list.length; j++) {
      const t = list[j]!;
      const w = (rt.tb + j) * WORDS;
      const d = (rt.tb + j) * F64;
      i32[w + SLOT] = this.rules.slotOf(t.ruleId);
      i32[w + COUNT] = t.count;
      u32[w + VERSION] = t.version ?? 0;
      i32[w + UNVERSIONED] = t.version === undefined ? 1 : 0;
      f64[d + LAST_SEQ] = t.lastSeq ?? NaN;
      f64[d + LAST_FIRED] = t.lastFiredAt;
    }
    return list.length;
  }

  /**
   * The thing's entries in the object form, in block order: every one (`all`: to forget the thing,
   * or to show it), or only the live ones (a checkpoint's row keeps no more). Undefined when the
   * thing has no block, or (live only) no live entry.
   */
  entries(rt: Block, all: boolean): ThresholdState[] | undefined {
    if (rt.tc === 0) return undefined;
    const { i32, u32, f64 } = this.pool.chunks[rt.tk]!;
    const out: ThresholdState[] = [];
    for (let e = rt.tb; e < rt.tb + rt.tn; e++) {
      if (!all && !this.isLiveAt(rt.tk, e)) continue;
      const w = e * WORDS;
      const d = e * F64;
      const t: ThresholdState = {
        ruleId: this.rules.idOf(i32[w + SLOT]!),
        count: i32[w + COUNT]!,
        lastFiredAt: f64[d + LAST_FIRED]!,
      };
      const lastSeq = f64[d + LAST_SEQ]!;
      if (!Number.isNaN(lastSeq)) t.lastSeq = lastSeq;
      if (i32[w + UNVERSIONED] === 0) t.version = u32[w + VERSION]!;
      out.push(t);
    }
    return all || out.length > 0 ? out : undefined;
  }

  /** Removes the thing's entry of the rule numbered `slot`, the others keeping their order. True when it had one. */
  drop(rt: Block, slot: number): boolean {
    if (rt.tc === 0) return false;
    const i32 = this.pool.chunks[rt.tk]!.i32;
    const end = rt.tb + rt.tn;
    for (let e = rt.tb; e < end; e++) {
      if (i32[e * WORDS + SLOT] !== slot) continue;
      i32.copyWithin(e * WORDS, (e + 1) * WORDS, end * WORDS);
      rt.tn--;
      return true;
    }
    return false;
  }

  /** The thing's block goes back to the pool (the engine forgets the thing). */
  release(rt: Block): void {
    if (rt.tc > 0) this.pool.release(rt.tk, rt.tb, rt.tc);
    rt.tc = 0;
    rt.tn = 0;
  }

  /** Every block goes back (the engine forgets every thing). */
  clear(): void {
    this.pool.clear();
  }

  private isLiveAt(k: number, e: number): boolean {
    const c = this.pool.chunks[k]!;
    return c.i32[e * WORDS + COUNT]! > 0 || c.f64[e * F64 + LAST_FIRED] !== 0;
  }

  /** Moves the thing's entries to a block twice the size (or its first block). */
  private grow(rt: Block): void {
    const size = rt.tc === 0 ? FIRST_BLOCK : rt.tc * 2;
    const start = this.pool.alloc(size);
    const k = this.pool.chunk;
    if (rt.tc > 0) {
      // Word by word: a few entries, and no view object made for them.
      const from = this.pool.chunks[rt.tk]!.i32;
      const to = this.pool.chunks[k]!.i32;
      for (let i = 0, a = rt.tb * WORDS, b = start * WORDS, n = rt.tn * WORDS; i < n; i++) to[b + i] = from[a + i]!;
      this.pool.release(rt.tk, rt.tb, rt.tc);
    }
    rt.tk = k;
    rt.tb = start;
    rt.tc = size;
  }
}
