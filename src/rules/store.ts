import type { Rule } from "../rule-model/index.js";

/** Generated ids: `<prefix><n>` with n left-padded to 8 digits. */
export const RULE_ID_PAD = 8;

/**
 * Where rules are kept: one document per rule, with the columns the access
 * checks filter on. Every method answers asynchronously, as a networked
 * database would; what must be read synchronously (the engine's compiled
 * rules) comes from the bus, never from here. The store does not announce
 * changes: `RulesService` does, once the store has taken them.
 */
export interface RuleStore {
  get(id: string): Promise<Rule | undefined>;
  /** Every rule, by id. */
  all(): Promise<Rule[]>;
  /** The next free generated id; ids taken by explicit CREATEs are skipped. */
  nextId(): Promise<string>;
  /** Adds a rule; RULE_ID_EXISTS (property `id`) when its id is taken. */
  insert(rule: Rule): Promise<void>;
  /** Replaces the rule of the same id; a rule that is not there stays absent. */
  replace(rule: Rule): Promise<void>;
  remove(id: string): Promise<void>;
}

/** The columns a rule is stored with beside its document. */
export function ruleColumns(rule: Rule): { domain: string; thingType: string; enabled: boolean; doc: string } {
  return {
    domain: rule.filter.domain,
    thingType: rule.filter.thingType,
    enabled: rule.enabled,
    doc: JSON.stringify(rule),
  };
}

export function generatedRuleId(prefix: string, n: number): string {
  return `${prefix}${String(n).padStart(RULE_ID_PAD, "0")}`;
}
