/**
 * The triggers a threshold rule must make over a known stream, computed without the engine from
 * the semantics docs/engine.md ("Thresholds") gives: per (rule, thing), a count of consecutive
 * observations of the thing that match; the rule triggers when the count reaches `count`, and the
 * count starts again from zero. An observation that does not match resets the count. With
 * `interval` 0 no clock takes part, so the answer depends on the stream alone. Every observation
 * of the stream carries the rule's resource, so none is skipped as "not concerning" the rule.
 */
export interface ThresholdRule {
  id: string;
  /** The rule matches an observation whose value is above this. */
  above: number;
  count: number;
}

/** One observation of one thing, in the thing's order. */
export interface StreamItem {
  thingName: string;
  timestamp: number;
  value: number;
}

/** A trigger: `rule:thing:timestamp` (the timestamp names the observation within its thing). */
export type Trigger = string;

export function triggerOf(ruleId: string, thingName: string, timestamp: number): Trigger {
  return `${ruleId}:${thingName}:${timestamp}`;
}

/** Every trigger each rule makes over `stream`, a thing's items in the order it produced them. */
export function expectedTriggers(rules: readonly ThresholdRule[], stream: readonly StreamItem[]): Set<Trigger> {
  const counts = new Map<string, number>();
  const out = new Set<Trigger>();
  for (const item of stream) {
    for (const rule of rules) {
      const key = `${rule.id}:${item.thingName}`;
      if (item.value <= rule.above) {
        counts.set(key, 0);
        continue;
      }
      const count = (counts.get(key) ?? 0) + 1;
      if (count >= rule.count) {
        out.add(triggerOf(rule.id, item.thingName, item.timestamp));
        counts.set(key, 0);
      } else counts.set(key, count);
    }
  }
  return out;
}
