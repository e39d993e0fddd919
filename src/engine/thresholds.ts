import type { CompiledRule, EvalContext, RuleSet } from "./compile/index.js";
import type { RuleIndex } from "./rule-index.js";
import { isLive, type ThingState, type ThresholdState } from "./state/index.js";
import type { Runtime } from "./runtimes.js";

/**
 * Threshold counting: per (rule, thing), consecutive matching observations of the thing, and the
 * rules that reached their count (and interval) with this observation. Entries live in the thing's
 * state (`ThingState.thresholds`). An entry that no longer matters (see `prune`) is made inert in
 * place (count 0, never fired: exactly what no entry means) rather than removed, and the next rule
 * that needs an entry for the thing takes it over (`settle`, after the prune). The thing's list keeps
 * its size (the most rules live for it at once) and its entries stay its own: no array is emptied
 * and grown again, no entry travels between things, so the hot path allocates nothing that would
 * outlive a young generation and touches no other thing's memory. `isLive` tells the entries a
 * store need keep.
 */
export class Thresholds {
  /** The rules that fired for the current observation, `count` of them (see `count`). */
  readonly fired: CompiledRule[] = [];
  /** Rule matches counted since `reset` (all expressions true), for the benchmark. */
  matches = 0;
  private readonly matched: CompiledRule[] = [];
  /** Rules that matched the current observation with no entry for the thing: `settle` makes theirs. */
  private readonly fresh: CompiledRule[] = [];
  private freshCount = 0;

  constructor(private readonly rules: RuleIndex) {}

  /**
   * Counts the rules of `set` that match the observation in `ctx` for the thing `rt` (its `seq`-th
   * observation): those that reach their threshold are added to `fired` from index `fired` on.
   * Returns the new number of fired rules. A matching rule without an entry for the thing is
   * counted here (a fresh entry's count is 1: it fires when the rule's count is 1) but its entry is
   * only made by `settle`, after the `prune`: it then takes over an entry this observation ended
   * instead of growing the thing's list (one entry per rule live at once, not per rule live in
   * two observations in a row: half the entries, each one allocated and promoted).
   */
  count(set: RuleSet, ctx: EvalContext, rt: Runtime, seq: number, now: number, fired: number): number {
    const list = rt.state.thresholds;
    const matched = this.matched;
    const n = set.matches(ctx, matched);
    const domains = rt.domains;
    const own = rt.domain;
    for (let i = 0; i < n; i++) {
      const rule = matched[i]!;
      if (rule.domain !== own && !domains.has(rule.domain)) continue;
      this.matches++;
      rt.armed++;
      let th: ThresholdState | undefined;
      if (list !== undefined)
        for (let j = 0; j < list.length; j++) {
          const e = list[j]!;
          if (e.ruleId === rule.id) {
            th = e;
            break;
          }
        }
      if (th === undefined) {
        // What a new entry would hold: count 1, fired at once when the rule's count is 1.
        this.fresh[this.freshCount++] = rule;
        if (rule.count <= 1) this.fired[fired++] = rule;
        continue;
      }
      if (th.version !== rule.version) {
        // Counted under the rule's previous conditions (kept in the database while the rule changed).
        // An entry from before versions existed has none: it keeps its count, as it always has.
        if (th.version === undefined) th.version = rule.version;
        else startOver(th, rule.version);
      }
      // Consecutive: the previous observation of this thing matched too; anything else started over.
      th.count = th.lastSeq === seq - 1 ? th.count + 1 : 1;
      th.lastSeq = seq;
      if (th.count >= rule.count && (th.lastFiredAt === 0 || now - th.lastFiredAt >= rule.intervalMs)) {
        th.count = 0;
        // Only an interval needs the time; without one the entry is inert again.
        th.lastFiredAt = rule.intervalMs > 0 ? now : 0;
        this.fired[fired++] = rule;
      }
    }
    return fired;
  }

  /**
   * Makes the entries of the rules `count` found without one (after `prune`, so that they take over
   * the entries it made inert): each as a new entry would be after one match. Returns how many of
   * them are live.
   */
  settle(st: ThingState, seq: number, now: number): number {
    const k = this.freshCount;
    if (k === 0) return 0;
    this.freshCount = 0;
    let list = st.thresholds;
    if (list === undefined) list = st.thresholds = [];
    let live = 0;
    let j = 0;
    for (let f = 0; f < k; f++) {
      const rule = this.fresh[f]!;
      while (j < list.length && isLive(list[j]!)) j++;
      let th: ThresholdState;
      if (j < list.length) (th = list[j]!).ruleId = rule.id;
      else list.push((th = { ruleId: rule.id, count: 0, lastFiredAt: 0, lastSeq: -1, version: 0 }));
      th.version = rule.version;
      th.lastSeq = seq;
      if (rule.count <= 1) {
        th.count = 0;
        th.lastFiredAt = rule.intervalMs > 0 ? now : 0;
      } else {
        th.count = 1;
        th.lastFiredAt = 0;
      }
      if (isLive(th)) live++;
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
  prune(list: ThresholdState[], ctx: EvalContext, seq: number, now: number): number {
    let live = 0;
    // Whether the observation carries every resource any rule names (asked once, when a count
    // needs it): then it concerns every rule, and a count it did not continue ends without
    // looking its rule up by id (the usual case: devices that report their whole state).
    let concernsAll: boolean | undefined;
    for (let r = 0; r < list.length; r++) {
      const e = list[r]!;
      if (e.count > 0) {
        if (e.lastSeq === seq) {
          live++;
          continue;
        }
        if (e.lastSeq === seq - 1 && !(concernsAll ??= this.rules.concernsAll(ctx))) {
          const rule = this.rules.rule(e.ruleId);
          if (rule !== undefined && !rule.concerns(ctx)) {
            e.lastSeq = seq;
            live++;
            continue;
          }
        }
        e.count = 0;
      }
      if (e.lastFiredAt !== 0) {
        const rule = this.rules.rule(e.ruleId);
        if (rule === undefined || now - e.lastFiredAt >= rule.intervalMs) e.lastFiredAt = 0;
        else live++;
      }
    }
    return live;
  }
}

/** A threshold entry at count 0, never fired, under the rule's conditions of `version`. */
function startOver(th: ThresholdState, version: number): void {
  th.version = version;
  th.count = 0;
  th.lastFiredAt = 0;
  th.lastSeq = -1;
}
