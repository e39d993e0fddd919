import { authorize, requireReadWrite, type Identity, type Principal } from "../auth/index.js";
import type { EventBus } from "../bus/index.js";
import { compileRule } from "../engine/index.js";
import { ApiError, invalid, notAuthorized, notFound } from "../errors/index.js";
import type { ThingRegistry } from "../things/index.js";
import { dryRun, type DryRunObservation, type DryRunReport } from "./dry-run.js";
import { checkChaining, checkLoop, overlapWith, type Overlap } from "./loop.js";
import type { BulkUpdateBody, CreateRuleBody, RuleBody } from "./schema.js";
import type { RuleStore } from "./store.js";
import type { Rule } from "../rule-model/index.js";
import { checkActions, checkExpression } from "./validate.js";

/** A rule as the caller sees it. */
export type RuleView = Rule & { readonly: boolean };

export interface BulkResult {
  updated: RuleView[];
  errors: { id: string; message: string }[];
}

export interface RulesOptions {
  store: RuleStore;
  /** Where each change is announced as `rule.changed`, once stored: engines recompile it. */
  bus: EventBus;
  identity: Identity;
  registry: ThingRegistry;
  allowPrivateWebhooks: boolean;
}

/**
 * The Rules operations with their access rules. Visibility: a rule is seen
 * by whoever holds `Rules.READ` on its domain (directly or from above) or on
 * a domain below it (a rule of an ancestor domain acts on the caller's
 * things), and `ThingTypes.READ` on its thing type; it is `readonly` unless
 * the caller holds `Rules.UPDATE` on its domain.
 */
export class RulesService {
  private readonly store: RuleStore;
  private readonly identity: Identity;
  private readonly registry: ThingRegistry;
  private readonly overlap: Overlap;

  constructor(private readonly options: RulesOptions) {
    this.store = options.store;
    this.identity = options.identity;
    this.registry = options.registry;
    this.overlap = overlapWith((a, b) => this.identity.isAncestorOrSelf(a, b));
  }

  async list(p: Principal): Promise<RuleView[]> {
    authorize(p, "Rules.READ", p.homeDomain);
    return (await this.store.all()).filter((r) => this.visible(p, r)).map((r) => this.view(p, r));
  }

  async get(p: Principal, id: string): Promise<RuleView> {
    const rule = await this.existing(id);
    if (!this.visible(p, rule)) throw notAuthorized(`User ${p.userName} may not read rule ${id}`);
    return this.view(p, rule);
  }

  async create(p: Principal, body: CreateRuleBody): Promise<RuleView> {
    requireReadWrite(p);
    authorize(p, "Rules.CREATE", body.filter.domain);
    authorize(p, "Domains.READ", body.filter.domain);
    const draft = this.validated(p, body.id ?? "", body);
    if (body.id !== undefined && (await this.store.get(body.id))) {
      throw new ApiError("RULE_ID_EXISTS", `Rule ${body.id} already exists`, "id");
    }
    const rule = { ...draft, id: body.id ?? (await this.store.nextId()) };
    await this.checkGraph(rule);
    await this.store.insert(rule);
    this.changed(rule.id, rule);
    return this.view(p, rule);
  }

  async update(p: Principal, id: string, body: RuleBody): Promise<RuleView> {
    const current = await this.existing(id);
    requireReadWrite(p);
    const from = current.filter.domain;
    const to = body.filter.domain;
    if (from === to) {
      authorize(p, "Rules.UPDATE", from);
    } else {
      authorize(p, "Rules.DELETE", from);
      authorize(p, "Rules.CREATE", to);
      authorize(p, "Domains.READ", to);
    }
    const rule = this.validated(p, id, body);
    await this.checkGraph(rule);
    await this.store.replace(rule);
    this.changed(id, rule);
    return this.view(p, rule);
  }

  async remove(p: Principal, id: string): Promise<void> {
    const rule = await this.existing(id);
    requireReadWrite(p);
    authorize(p, "Rules.DELETE", rule.filter.domain);
    this.authorizeTargets(p, rule);
    await this.store.remove(id);
    this.changed(id, null);
  }

  /** Sets `enabled` of each rule; a rule that cannot be updated is reported and the others are applied. */
  async bulkUpdate(p: Principal, body: BulkUpdateBody): Promise<BulkResult> {
    const result: BulkResult = { updated: [], errors: [] };
    for (const { id, enabled } of body.rules) {
      try {
        const rule = await this.existing(id);
        authorize(p, "Rules.UPDATE", rule.filter.domain);
        const next = { ...rule, enabled };
        await this.store.replace(next);
        this.changed(id, next);
        result.updated.push(this.view(p, next));
      } catch (e) {
        if (!(e instanceof ApiError)) throw e;
        result.errors.push({ id, message: e.message });
      }
    }
    return result;
  }

  /**
   * POST /rules/test: what a rule body would do with these observations,
   * without storing anything or sending anything. Needs `Rules.READ` on the
   * filter's domain and the rule must validate as CREATE would have it.
   */
  test(
    p: Principal,
    body: RuleBody & { id?: string | undefined },
    observations: readonly DryRunObservation[],
  ): DryRunReport {
    authorize(p, "Rules.READ", body.filter.domain);
    const rule = this.validated(p, body.id ?? "dry-run", body);
    return dryRun(rule, observations, this.registry);
  }

  private async existing(id: string): Promise<Rule> {
    const rule = await this.store.get(id);
    if (!rule) throw notFound("RULE_NOT_FOUND", `Rule ${id}`, "id");
    return rule;
  }

  private visible(p: Principal, rule: Rule): boolean {
    const domain = rule.filter.domain;
    const path = this.identity.pathOf(domain);
    const ruleRead =
      p.can("Rules.READ", domain) ||
      (path !== undefined &&
        this.identity.domains().some((d) => d.path.startsWith(`${path}/`) && p.can("Rules.READ", d.id)));
    if (!ruleRead) return false;
    const type = this.registry.thingType(rule.filter.thingType);
    if (type && !p.can("ThingTypes.READ", type.domain)) return false;
    return (rule.filter.thingNames ?? []).every((n) => {
      const thing = this.registry.thing(n);
      return !thing || p.can("Things.READ", thing.domain);
    });
  }

  private view(p: Principal, rule: Rule): RuleView {
    return { ...rule, readonly: !p.can("Rules.UPDATE", rule.filter.domain) };
  }

  /** `ThingTypes.READ` on the filter's type and `Things.READ` on each named thing. */
  private authorizeTargets(p: Principal, rule: Pick<Rule, "filter">): void {
    const type = this.registry.thingType(rule.filter.thingType);
    if (type) authorize(p, "ThingTypes.READ", type.domain);
    for (const n of rule.filter.thingNames ?? []) {
      const thing = this.registry.thing(n);
      if (thing) authorize(p, "Things.READ", thing.domain);
    }
  }

  /** The rule a body describes, checked in full: references, expressions and action configs. */
  private validated(p: Principal, id: string, body: RuleBody): Rule {
    const { filter } = body;
    const type = this.registry.thingType(filter.thingType);
    if (!type) throw invalid("filter.thingType", `thing type ${filter.thingType} does not exist`);
    this.authorizeTargets(p, body);
    for (const n of filter.thingNames ?? []) {
      const thing = this.registry.thing(n);
      if (!thing) throw invalid("filter.thingNames", `thing ${n} does not exist`);
      if (thing.thingType !== filter.thingType) {
        throw invalid("filter.thingNames", `thing ${n} is of type ${thing.thingType}, not ${filter.thingType}`);
      }
      if (!this.identity.isAncestorOrSelf(filter.domain, thing.domain)) {
        throw invalid("filter.thingNames", `thing ${n} is not in domain ${filter.domain}`);
      }
    }
    body.expression.forEach(checkExpression);
    const actions = checkActions(body.actions, this.options.allowPrivateWebhooks);
    const rule: Rule = {
      id,
      name: body.name,
      enabled: body.enabled,
      filter: { domain: filter.domain, thingType: filter.thingType },
      expression: body.expression,
      threshold: body.threshold,
      actions,
    };
    if (filter.thingNames !== undefined) rule.filter.thingNames = filter.thingNames;
    if (body.description !== undefined) rule.description = body.description;
    if (body.category !== undefined) rule.category = body.category;
    // The engine must be able to run what is stored: its compiler has the last word.
    compileRule(rule);
    return rule;
  }

  private changed(id: string, rule: Rule | null): void {
    this.options.bus.emit("rule.changed", { id, rule });
  }

  private async checkGraph(rule: Rule): Promise<void> {
    const others = (await this.store.all()).filter((r) => r.id !== rule.id);
    checkLoop(rule, others, this.overlap);
    checkChaining(rule, others, this.overlap);
  }
}
