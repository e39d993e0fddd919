import { ApiError } from "../errors/index.js";
import type { Rule } from "../rule-model/index.js";

/** The threshold interval a SET_RESOURCE rule needs when another rule uses the resource it sets. */
export const MIN_CHAINED_INTERVAL = 30;

/** Whether two rules can act on the same thing: same type, nested domains, shared thing names. */
export type Overlap = (a: Rule, b: Rule) => boolean;

export function reads(rule: Rule): Set<string> {
  return new Set(rule.expression.map((e) => e.resource));
}

/** Resources the rule's SET_RESOURCE actions write, with the action index. */
export function writes(rule: Rule): { resource: string; index: number }[] {
  const out: { resource: string; index: number }[] = [];
  rule.actions.forEach((a, index) => {
    if (a.type === "SET_RESOURCE" && typeof a.config.resource === "string")
      out.push({ resource: a.config.resource, index });
  });
  return out;
}

export function overlapWith(isAncestorOrSelf: (a: string, b: string) => boolean): Overlap {
  return (a, b) => {
    if (a.filter.thingType !== b.filter.thingType) return false;
    const da = a.filter.domain;
    const db = b.filter.domain;
    if (!isAncestorOrSelf(da, db) && !isAncestorOrSelf(db, da)) return false;
    if (a.filter.thingNames?.length && b.filter.thingNames?.length) {
      const names = new Set(a.filter.thingNames);
      return b.filter.thingNames.some((n) => names.has(n));
    }
    return true;
  };
}

/** Rule `a` can trigger rule `b`: a SET_RESOURCE of `a` writes what `b` reads, on things both act on. */
function triggers(a: Rule, b: Rule, overlap: Overlap): boolean {
  const w = writes(a);
  if (w.length === 0 || !overlap(a, b)) return false;
  const r = reads(b);
  return w.some((x) => r.has(x.resource));
}

/**
 * A cycle through `candidate` in the graph "rule SET_RESOURCE writes R" ->
 * "rules of the type that read R", as ids from candidate back to it. The
 * stored rules are acyclic (every change passed this check), so a new
 * cycle passes through the candidate.
 */
export function findCycle(candidate: Rule, others: readonly Rule[], overlap: Overlap): string[] | undefined {
  const rules = [candidate, ...others.filter((r) => r.id !== candidate.id)];
  const previous = new Map<string, string>();
  const queue: Rule[] = [candidate];
  const seen = new Set<string>();
  while (queue.length > 0) {
    const rule = queue.shift()!;
    for (const next of rules) {
      if (!triggers(rule, next, overlap)) continue;
      if (next.id === candidate.id) return path(previous, rule.id, candidate.id);
      if (seen.has(next.id)) continue;
      seen.add(next.id);
      previous.set(next.id, rule.id);
      queue.push(next);
    }
  }
  return undefined;
}

function path(previous: Map<string, string>, last: string, start: string): string[] {
  const ids = [last];
  let at = last;
  while (at !== start) {
    at = previous.get(at)!;
    ids.unshift(at);
  }
  return [...ids, start];
}

/** Refuses a candidate that closes a possible loop (INVALID_RULE, property `rules`) naming the cycle. */
export function checkLoop(candidate: Rule, others: readonly Rule[], overlap: Overlap): void {
  const cycle = findCycle(candidate, others, overlap);
  if (cycle) {
    throw new ApiError(
      "INVALID_RULE",
      `Rule ${candidate.id} would create a possible loop: ${cycle.join(" -> ")}`,
      "rules",
    );
  }
}

/**
 * The interface's SET_RESOURCE limit: a resource a rule sets may appear in
 * another rule of the thing type only if the setting rule's threshold
 * interval is 30 seconds or longer.
 */
export function checkChaining(candidate: Rule, others: readonly Rule[], overlap: Overlap): void {
  const peers = others.filter((o) => o.id !== candidate.id && overlap(candidate, o));
  const uses = (r: Rule): Set<string> => new Set([...reads(r), ...writes(r).map((w) => w.resource)]);
  if (candidate.threshold.interval < MIN_CHAINED_INTERVAL) {
    for (const w of writes(candidate)) {
      const other = peers.find((o) => uses(o).has(w.resource));
      if (other) {
        throw new ApiError(
          "INVALID_RULE_CONFIG",
          `SET_RESOURCE of ${w.resource} needs a threshold interval of ${MIN_CHAINED_INTERVAL} s or more: rule ${other.id} also uses ${w.resource}`,
          `actions.${w.index}.config.resource`,
        );
      }
    }
  }
  const mine = uses(candidate);
  for (const other of peers) {
    if (other.threshold.interval >= MIN_CHAINED_INTERVAL) continue;
    const w = writes(other).find((x) => mine.has(x.resource));
    if (w) {
      throw new ApiError(
        "INVALID_RULE",
        `Rule ${other.id} sets ${w.resource} with a threshold interval under ${MIN_CHAINED_INTERVAL} s, so no other rule of the type may use it`,
        "rules",
      );
    }
  }
}
