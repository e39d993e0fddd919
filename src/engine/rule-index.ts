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
 * the batch loop looks up once per thing type of a batch. A change re-indexes only its thing type,
 * on the next lookup.
 */
export class RuleIndex {
  private readonly rules = new Map<string, CompiledRule>();
  /** The enabled rules by thing type: what a type's rule sets are rebuilt from, without a pass over every rule. */
  private readonly byType = new Map<string, Map<string, CompiledRule>>();
  private readonly types = new Map<string, TypeRules>();
  /**
   * Thing types whose rules changed since their rule sets were built: built again on the next
   * lookup, once, however many of their rules changed in between (a fleet's rules applied one by one).
   */
  private readonly stale = new Set<string>();
  /**
   * How many rules' items name each resource of the thing's own (`concernsAll`), and how many
   * items name a nested one (`<type>.<resource>`): counted as rules come and go, so that a change
   * costs its own rule's items rather than a pass over every rule's.
   */
  private readonly namedCounts = new Map<string, number>();
  private nestedItems = 0;
  /** The resources of `namedCounts`, or undefined while an item names a nested resource; made on the first need after a change. */
  private named: string[] | undefined = [];
  private namedStale = false;

  constructor(
    private readonly compile: CompileOptions | undefined,
    /** Find constant comparisons through sorted indexes (default); false scans every rule of the type. */
    private readonly indexed: boolean | undefined,
  ) {}

  /** Replaces every rule. Throws nothing: a rule that does not compile is skipped and returned. */
  load(rules: readonly Rule[]): { id: string; error: string }[] {
    const errors: { id: string; error: string }[] = [];
    this.rules.clear();
    this.byType.clear();
    this.namedCounts.clear();
    this.nestedItems = 0;
    this.namedStale = true;
    for (const rule of rules) {
      if (!rule.enabled) continue;
      try {
        const compiled = compileRule(rule, this.compile);
        // A second rule of the same id replaces the first, in the first's place (as a Map's set does).
        const previous = this.rules.get(rule.id);
        if (previous === undefined) this.add(compiled);
        else this.replace(previous, compiled);
      } catch (err) {
        errors.push({ id: rule.id, error: (err as Error).message });
      }
    }
    this.types.clear();
    for (const type of this.byType.keys()) this.stale.add(type);
    return errors;
  }

  /**
   * A rule created, updated, disabled (`enabled` false) or removed (null); throws when it does not
   * compile. True when the rule's thresholds must start over: it is gone, or its conditions changed.
   * Costs the rule's own items; its thing types are built again on their next lookup (`ofType`).
   */
  apply(id: string, rule: Rule | null): boolean {
    const before = this.rules.get(id);
    const compiled = rule && rule.enabled ? compileRule(rule, this.compile) : undefined;
    if (compiled !== undefined) {
      if (before === undefined) this.add(compiled);
      else this.replace(before, compiled);
    } else if (before !== undefined) {
      this.count(before, -1);
      this.rules.delete(id);
      this.leaveType(before);
    }
    if (before) this.stale.add(before.thingType);
    if (compiled) this.stale.add(compiled.thingType);
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
    if (this.namedStale) {
      this.namedStale = false;
      this.named = this.nestedItems > 0 ? undefined : [...this.namedCounts.keys()];
    }
    const named = this.named;
    if (named === undefined) return false;
    const os = ctx.os;
    for (let i = 0; i < named.length; i++) if (!Object.hasOwn(os, named[i]!)) return false;
    return true;
  }

  ofType(thingType: string): TypeRules | undefined {
    if (this.stale.size !== 0) this.rebuildStale();
    return this.types.get(thingType);
  }

  /** A rule new to the index, last in its type's order. */
  private add(compiled: CompiledRule): void {
    this.rules.set(compiled.id, compiled);
    let ofType = this.byType.get(compiled.thingType);
    if (ofType === undefined) this.byType.set(compiled.thingType, (ofType = new Map()));
    ofType.set(compiled.id, compiled);
    this.count(compiled, 1);
  }

  /** A rule's new version, in the old one's place (a Map's set keeps a key's place). */
  private replace(before: CompiledRule, compiled: CompiledRule): void {
    this.count(before, -1);
    this.rules.set(compiled.id, compiled);
    this.count(compiled, 1);
    if (compiled.thingType === before.thingType) this.byType.get(before.thingType)!.set(compiled.id, compiled);
    else {
      this.leaveType(before);
      this.joinTypeInPlace(compiled);
    }
  }

  private leaveType(compiled: CompiledRule): void {
    const ofType = this.byType.get(compiled.thingType);
    ofType?.delete(compiled.id);
    if (ofType?.size === 0) this.byType.delete(compiled.thingType);
  }

  /**
   * A rule that moved to another thing type takes its place there by its place among all rules (as
   * when the type's rules are listed from all of them): a pass over every rule, only on such a move.
   */
  private joinTypeInPlace(compiled: CompiledRule): void {
    const ofType = new Map<string, CompiledRule>();
    for (const r of this.rules.values()) if (r.thingType === compiled.thingType) ofType.set(r.id, r);
    this.byType.set(compiled.thingType, ofType);
  }

  /** Adds (+1) or takes away (-1) the resources a rule's items name (`CompiledRule.concerns`). */
  private count(compiled: CompiledRule, by: 1 | -1): void {
    for (const item of compiled.rule.expression) {
      const { type, name } = splitResource(item.resource);
      if (type !== undefined) {
        this.nestedItems += by;
        continue;
      }
      const n = (this.namedCounts.get(name) ?? 0) + by;
      if (n === 0) this.namedCounts.delete(name);
      else this.namedCounts.set(name, n);
    }
    this.namedStale = true;
  }

  private rebuildStale(): void {
    for (const type of this.stale) this.rebuild(type);
    this.stale.clear();
  }

  private rebuild(thingType: string): void {
    const ofType = this.byType.get(thingType);
    if (ofType === undefined) {
      this.types.delete(thingType);
      return;
    }
    const rules = [...ofType.values()];
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
