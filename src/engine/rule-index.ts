import type { Rule } from "../rule-model/index.js";
import {
  compileRule,
  conditionsOf,
  RuleSet,
  splitResource,
  type CompiledRule,
  type CompileOptions,
  type EvalContext,
} from "./compile/index.js";

/** A thing type's rules: those for every thing of the type, and those naming things (`thingNames`). */
export interface TypeRules {
  general: RuleSet;
  byThing: Map<string, RuleSet>;
}

/**
 * The compiled rules, indexed by thing type (and by thing name for rules with `thingNames`): what
 * the batch loop looks up once per thing type of a batch. A change re-indexes only its thing type.
 */
export class RuleIndex {
  private readonly rules = new Map<string, CompiledRule>();
  private readonly types = new Map<string, TypeRules>();
  /**
   * Every resource of the thing's own that some rule's items name, or undefined when some item
   * names a nested resource (`<type>.<resource>`): see `concernsAll`.
   */
  private named: string[] | undefined = [];

  constructor(
    private readonly compile: CompileOptions | undefined,
    /** Find constant comparisons through sorted indexes (default); false scans every rule of the type. */
    private readonly indexed: boolean | undefined,
  ) {}

  /** Replaces every rule. Throws nothing: a rule that does not compile is skipped and returned. */
  load(rules: readonly Rule[]): { id: string; error: string }[] {
    const errors: { id: string; error: string }[] = [];
    this.rules.clear();
    for (const rule of rules) {
      if (!rule.enabled) continue;
      try {
        this.rules.set(rule.id, compileRule(rule, this.compile));
      } catch (err) {
        errors.push({ id: rule.id, error: (err as Error).message });
      }
    }
    this.types.clear();
    for (const type of new Set([...this.rules.values()].map((r) => r.thingType))) this.rebuild(type);
    this.named = namedResources(this.rules.values());
    return errors;
  }

  /**
   * A rule created, updated, disabled (`enabled` false) or removed (null); throws when it does not
   * compile. True when the rule's thresholds must start over: it is gone, or its conditions changed.
   */
  apply(id: string, rule: Rule | null): boolean {
    const before = this.rules.get(id);
    const compiled = rule && rule.enabled ? compileRule(rule, this.compile) : undefined;
    if (compiled) this.rules.set(id, compiled);
    else this.rules.delete(id);
    if (before) this.rebuild(before.thingType);
    if (compiled && compiled.thingType !== before?.thingType) this.rebuild(compiled.thingType);
    this.named = namedResources(this.rules.values());
    return !rule || !before || conditionsOf(before.rule) !== conditionsOf(rule);
  }

  get size(): number {
    return this.rules.size;
  }

  rule(id: string): CompiledRule | undefined {
    return this.rules.get(id);
  }

  /**
   * Whether the observation in `ctx` carries every resource any rule names, so that every rule's
   * `concerns` is true: the same own-key test, made once for all rules rather than once per rule.
   */
  concernsAll(ctx: EvalContext): boolean {
    const named = this.named;
    if (named === undefined) return false;
    const os = ctx.os;
    for (let i = 0; i < named.length; i++) if (!Object.hasOwn(os, named[i]!)) return false;
    return true;
  }

  ofType(thingType: string): TypeRules | undefined {
    return this.types.get(thingType);
  }

  private rebuild(thingType: string): void {
    const rules = [...this.rules.values()].filter((r) => r.thingType === thingType);
    if (rules.length === 0) {
      this.types.delete(thingType);
      return;
    }
    const byThingLists = new Map<string, CompiledRule[]>();
    for (const r of rules) {
      for (const name of r.thingNames ?? []) {
        const list = byThingLists.get(name);
        if (list) list.push(r);
        else byThingLists.set(name, [r]);
      }
    }
    this.types.set(thingType, {
      general: new RuleSet(
        rules.filter((r) => r.thingNames === undefined),
        this.indexed,
      ),
      byThing: new Map([...byThingLists].map(([name, list]) => [name, new RuleSet(list, this.indexed)])),
    });
  }
}

/** The own resources the rules' items name (`CompiledRule.concerns`), or undefined when one names a nested resource. */
function namedResources(rules: Iterable<CompiledRule>): string[] | undefined {
  const names = new Set<string>();
  for (const r of rules)
    for (const item of r.rule.expression) {
      const { type, name } = splitResource(item.resource);
      if (type !== undefined) return undefined;
      names.add(name);
    }
  return [...names];
}
