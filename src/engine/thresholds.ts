import type { CompiledRule, EvalContext, RuleSet } from "./compile/index.js";
import type { RuleIndex } from "./rule-index.js";
import type { ThresholdState } from "./state/index.js";
import type { Runtime } from "./runtimes.js";

const MAX_SPARE_THRESHOLDS = 10_000;

/**
 * Threshold counting: per (rule, thing), consecutive matching observations of the thing, and the
 * rules that reached their count (and interval) with this observation. Entries live in the thing's
 * state (`ThingState.thresholds`), only while they matter (see `prune`).
 */
export class Thresholds {
  /** The rules that fired for the current observation, `count` of them (see `count`). */
  readonly fired: CompiledRule[] = [];
  /** Rule matches counted since `reset` (all expressions true), for the benchmark. */
  matches = 0;
  private readonly matched: CompiledRule[] = [];
  /**
   * Threshold entries pruned from one thing, reused for the next match anywhere: a match
   * lives for a few observations of its thing, and allocating each would feed the GC.
   * Nothing else holds a pruned entry (state stores read the things' lists when they flush).
   */
  private readonly spare: ThresholdState[] = [];

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
      let list = st.thresholds;
      if (list === undefined) list = st.thresholds = [];
      let th: ThresholdState | undefined;
      for (let j = 0; j < list.length; j++) {
        if (list[j]!.ruleId === rule.id) {
          th = list[j];
          break;
        }
      }
      if (th === undefined) {
        th = this.spare.pop() ?? { ruleId: "", count: 0, lastFiredAt: 0, lastSeq: -1, version: 0 };
        th.ruleId = rule.id;
        startOver(th, rule.version);
        list.push(th);
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
        // Only an interval needs the time; without one the entry can go.
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
   * else equals no entry. Only live entries pay the concern test: a rule at
   * count 0 has nothing to reset.
   */
  prune(list: ThresholdState[], ctx: EvalContext, seq: number, now: number): void {
    let w = 0;
    for (let r = 0; r < list.length; r++) {
      const e = list[r]!;
      let keep = e.lastSeq === seq && e.count > 0;
      if (!keep && e.count > 0 && e.lastSeq === seq - 1) {
        const rule = this.rules.rule(e.ruleId);
        if (rule !== undefined && !rule.concerns(ctx)) {
          e.lastSeq = seq;
          keep = true;
        }
      }
      if (!keep && e.lastFiredAt !== 0) {
        const rule = this.rules.rule(e.ruleId);
        keep = rule !== undefined && now - e.lastFiredAt < rule.intervalMs;
      }
      if (keep) list[w++] = e;
      else if (this.spare.length < MAX_SPARE_THRESHOLDS) this.spare.push(e);
    }
    list.length = w;
  }
}

/** A threshold entry at count 0, never fired, under the rule's conditions of `version`. */
function startOver(th: ThresholdState, version: number): void {
  th.version = version;
  th.count = 0;
  th.lastFiredAt = 0;
  th.lastSeq = -1;
}
