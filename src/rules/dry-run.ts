import { payloadScope, substitute, type RulePayload } from "../actions/index.js";
import { compileRule, evaluateRule, type NestedObservation } from "../engine/index.js";
import type { ThingRegistry } from "../things/index.js";
import type { ActionItem, Rule } from "../rule-model/index.js";

/** At most this many observations per dry run. */
export const MAX_DRY_RUN_OBSERVATIONS = 1000;

export interface DryRunObservation {
  thingName?: string | undefined;
  /** Epoch ms or ISO 8601; absent: one millisecond after the previous one. */
  timestamp?: number | string | undefined;
  state: Record<string, unknown>;
  nested?: NestedObservation[] | undefined;
}

export interface DryRunItem {
  index: number;
  thingName: string;
  /** The thing is one the rule's filter names (always true without `thingNames`). */
  inFilter: boolean;
  /** Every expression matched. */
  matched: boolean;
  expressions: { operator: string; resource: string; matched: boolean }[];
  /** The threshold let the actions run. */
  triggered: boolean;
  /** The actions with their configs substituted, when triggered. */
  actions?: ActionItem[];
  /** `${...}` variables that had no value and became empty strings. */
  unknownVariables?: string[];
}

export interface DryRunReport {
  triggeredCount: number;
  results: DryRunItem[];
}

interface ThingRun {
  state: Record<string, unknown>;
  nested: NestedObservation[] | undefined;
  count: number;
  lastFiredAt: number | undefined;
  lastMatched: boolean;
}

/**
 * Replays observations through a rule with the engine's compiler and
 * evaluation, and no side effect: thing state and threshold counters live
 * only in this call, nothing is stored or sent. Time is the observations'
 * own timestamps, so `threshold.interval` is judged on them.
 */
export function dryRun(rule: Rule, observations: readonly DryRunObservation[], registry: ThingRegistry): DryRunReport {
  const compiled = compileRule(rule);
  const things = new Map<string, ThingRun>();
  const results: DryRunItem[] = [];
  let clock = Date.now();
  let triggeredCount = 0;
  observations.forEach((o, index) => {
    const thingName = o.thingName ?? rule.filter.thingNames?.[0] ?? "dry-run-thing";
    const timestamp = readTimestamp(o.timestamp) ?? clock + 1;
    clock = timestamp;
    let run = things.get(thingName);
    if (!run) {
      run = { state: {}, nested: undefined, count: 0, lastFiredAt: undefined, lastMatched: false };
      things.set(thingName, run);
    }
    const inFilter = !rule.filter.thingNames || rule.filter.thingNames.includes(thingName);
    const evaluation = evaluateRule(compiled, {
      observation: { state: o.state, ...(o.nested ? { nested: o.nested } : {}) },
      thing: { state: run.state, ...(run.nested ? { nested: run.nested } : {}) },
    });
    const matched = inFilter && evaluation.matched;
    const item: DryRunItem = {
      index,
      thingName,
      inFilter,
      matched,
      expressions: evaluation.expressions,
      triggered: false,
    };
    if (matched) {
      run.count = run.lastMatched ? run.count + 1 : 1;
      const due = run.lastFiredAt === undefined || timestamp - run.lastFiredAt >= rule.threshold.interval * 1000;
      if (run.count >= rule.threshold.count && due) {
        run.count = 0;
        run.lastFiredAt = timestamp;
        item.triggered = true;
        triggeredCount++;
        const unknown = new Set<string>();
        const payload = payloadFor(rule, thingName, run, o, index, timestamp, registry);
        const scope = payloadScope(payload);
        item.actions = rule.actions.map((a) => ({
          type: a.type,
          config: substitute(a.config, scope, (v) => unknown.add(v)),
        }));
        if (unknown.size > 0) item.unknownVariables = [...unknown];
      }
    }
    run.lastMatched = matched;
    run.state = { ...run.state, ...o.state };
    if (o.nested) run.nested = o.nested;
    results.push(item);
  });
  return { triggeredCount, results };
}

function payloadFor(
  rule: Rule,
  thingName: string,
  run: ThingRun,
  o: DryRunObservation,
  index: number,
  timestamp: number,
  registry: ThingRegistry,
): RulePayload {
  const thing = registry.thing(thingName);
  const payload: RulePayload = {
    rule: { id: rule.id, name: rule.name, domain: rule.filter.domain },
    thing: {
      thingName,
      thingType: thing?.thingType ?? rule.filter.thingType,
      domain: thing?.domain ?? rule.filter.domain,
      state: { ...run.state },
    },
    observation: { id: `dry-run:${index}`, timestamp, state: o.state, ...(o.nested ? { nested: o.nested } : {}) },
    timestamp,
    isoTimestamp: new Date(timestamp).toISOString(),
  };
  if (rule.category !== undefined) payload.rule.category = rule.category;
  return payload;
}

function readTimestamp(value: number | string | undefined): number | undefined {
  if (typeof value === "number") return Number.isFinite(value) ? value : undefined;
  if (typeof value !== "string") return undefined;
  if (/^\d+$/.test(value)) return Number(value);
  const t = Date.parse(value);
  return Number.isNaN(t) ? undefined : t;
}
