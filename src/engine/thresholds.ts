import type { CompiledRule, EvalContext, RuleSet } from "./compile/index.js";
import type { RuleIndex } from "./rule-index.js";
import { isLive, type ThresholdState } from "./state/index.js";
import type { Runtime } from "./runtimes.js";

/**
 * Threshold counting: per (rule, thing), consecutive matching observations of the thing, and the
 * rules that reached their count (and interval) with this observation. Entries live in the thing's
 * state (`ThingState.thresholds`). An entry that no longer matters (see `prune`) is made inert in
 * place (count 0, never fired: exactly what no entry means) rather than removed, and the next rule
 * that needs an entry for the thing takes it over. The thing's list keeps its size (the most rules
 * live for it at once) and its entries stay its own: no array is emptied and grown again, no
 * entry travels between things, so the hot path allocates nothing that would outlive a young
 * generation and touches no other thing's memory. `isLive` tells the entries a store need keep.
 */
export class Thresholds {
  /** The rules that fired for the current observation, `count` of them (see `count`). */
  readonly fired: CompiledRule[] = [];
  /** Rule matches counted since `reset` (all expressions true), for the benchmark. */
  matches = 0;
  private readonly matched: CompiledRule[] = [];

  constructor(private readonly rules: RuleIndex) {}

  /**
   * Counts the rules of `set` that match the observation in `ctx` for the thing `rt` (its `seq`-th
   * observation): those that reach their threshold are added to `fired` from index `fired` on.
   * Returns the new number of fired rules.
   */
  count(set: RuleSet, ctx: EvalContext, rt: Runtime, seq: number, now: number, fired: number): number {
    const st = rt.state;
    const matched = this.matched;
    const n = set.matches(ctx, matched);
    const domains = rt.domains;
    const own = rt.domain;
    for (let i = 0; i < n; i++) {
      const rule = matched[i]!;
      if (rule.domain !== own && !domains.has(rule.domain)) continue;
      this.matches++;
      rt.armed++;
      let list = st.thresholds;
      if (list === undefined) list = st.thresholds = [];
      let th: ThresholdState | undefined;
      let inert: ThresholdState | undefined;
      for (let j = 0; j < list.length; j++) {
        const e = list[j]!;
        if (e.ruleId === rule.id) {
          th = e;
          break;
        }
        if (inert === undefined && !isLive(e)) inert = e;
      }
      if (th === undefined) {
        if (inert === undefined)
          list.push((th = { ruleId: rule.id, count: 0, lastFiredAt: 0, lastSeq: -1, version: 0 }));
        else (th = inert).ruleId = rule.id;
        startOver(th, rule.version);
      } else if (th.version !== rule.version) {
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
   * Keeps only thresholds that matter: a count this observation continued, a
   * count this observation does not concern (it carries none of the rule's
   * resources: it neither matches nor resets, so the count goes on as if it
   * had not been seen), or a firing whose interval has not passed. Everything
   * else equals no entry, and is made inert. Only live entries pay the concern
   * test: a rule at count 0 has nothing to reset. Returns how many entries are live after it.
   */
  prune(list: ThresholdState[], ctx: EvalContext, seq: number, now: number): number {
    let live = 0;
    for (let r = 0; r < list.length; r++) {
      const e = list[r]!;
      if (e.count > 0) {
        if (e.lastSeq === seq) {
          live++;
          continue;
        }
        if (e.lastSeq === seq - 1) {
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
