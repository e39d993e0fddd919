import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { ExpressionItem, Rule } from "../../src/rules/index.js";
import { EvalContext, type CompiledRule } from "../../src/engine/compile/index.js";
import { RuleIndex, type TypeRules } from "../../src/engine/rule-index.js";
import { testRule } from "./support.js";

// The rule index is kept up to date change by change (`apply`): per thing type, and the resources
// the rules name counted as rules come and go, so that a change costs its own thing type rather
// than a pass over every rule. Whatever the changes, it must answer as an index loaded afresh with
// the rules they leave (in the order a Map of them keeps: an update keeps the rule's place, a
// rule removed or disabled and made again comes last): the same rules, matched in the same order
// (the order triggers are raised in), and the same `concernsAll`.

const IDS = ["r0", "r1", "r2", "r3", "r4", "r5"] as const;
const TYPES = ["10", "11", "12"] as const;

const item: fc.Arbitrary<ExpressionItem> = fc.oneof(
  fc.record({
    operator: fc.constantFrom("gt", "lt", "eq"),
    resource: fc.constantFrom("a", "b", "c"),
    value: fc.constantFrom(0, 1, 2),
  }),
  // A nested resource: while a rule names one, no observation concerns every rule.
  fc.record({ operator: fc.constant("gt"), resource: fc.constant("box.a"), value: fc.constant(0) }),
) as fc.Arbitrary<ExpressionItem>;

type Change = { kind: "apply"; id: string; rule: Rule | null } | { kind: "load"; ids: string[] };

const rule = (id: string): fc.Arbitrary<Rule> =>
  fc
    .record({
      expression: fc.array(item, { minLength: 1, maxLength: 3 }),
      thingType: fc.constantFrom(...TYPES),
      enabled: fc.boolean(),
      thingNames: fc.option(fc.constantFrom<string[][]>(["t1"], ["t1", "t2"]), { nil: undefined }),
    })
    .map(({ expression, thingType, enabled, thingNames }) =>
      testRule(id, expression, {
        enabled,
        filter: thingNames ? { domain: "acme", thingType, thingNames } : { domain: "acme", thingType },
      }),
    );

const change: fc.Arbitrary<Change> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.constantFrom(...IDS).chain((id) => rule(id).map((r) => ({ kind: "apply", id, rule: r }) as Change)),
  },
  { weight: 2, arbitrary: fc.constantFrom(...IDS).map((id) => ({ kind: "apply", id, rule: null }) as Change) },
  { weight: 1, arbitrary: fc.subarray([...IDS]).map((ids) => ({ kind: "load", ids }) as Change) },
);

const observations: Record<string, unknown>[] = [{ a: 1, b: 1, c: 1 }, { a: 3 }, { b: -1, c: 2 }, {}, { a: 0, b: 2 }];

/** What a type's rule sets match for each observation, in order: general, then each thing's. */
function answers(index: RuleIndex): unknown {
  const ctx = new EvalContext();
  const out: CompiledRule[] = [];
  const matched = (set: TypeRules["general"]): string[] => out.slice(0, set.matches(ctx, out)).map((r) => r.id);
  return observations.map((os) => {
    ctx.os = os;
    ctx.ts = {};
    return {
      concernsAll: index.concernsAll(ctx),
      types: TYPES.map((type) => {
        const rules = index.ofType(type);
        if (rules === undefined) return undefined;
        return [matched(rules.general), [...rules.byThing].map(([name, set]) => [name, matched(set)])];
      }),
    };
  });
}

describe("the rule index, change by change", () => {
  it("answers as an index loaded afresh with the rules the changes leave", () => {
    fc.assert(
      fc.property(
        fc.array(change, { minLength: 1, maxLength: 25 }),
        fc.array(rule("x"), { minLength: 6, maxLength: 6 }),
        (changes, loadable) => {
          const index = new RuleIndex(undefined, true);
          const model = new Map<string, Rule>();
          for (const c of changes) {
            if (c.kind === "load") {
              const rules = c.ids.map((id, i) => ({ ...loadable[i]!, id }));
              index.load(rules);
              model.clear();
              for (const r of rules) if (r.enabled) model.set(r.id, r);
            } else {
              index.apply(c.id, c.rule);
              if (c.rule?.enabled) model.set(c.id, c.rule);
              else model.delete(c.id);
            }
            const fresh = new RuleIndex(undefined, true);
            fresh.load([...model.values()]);
            expect(index.size).toBe(model.size);
            expect(answers(index)).toEqual(answers(fresh));
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it("takes a later rule of the same id in a load in the first one's place", () => {
    const a = testRule("a", [{ operator: "gt", resource: "a", value: 0 }]);
    const b = testRule("b", [{ operator: "gt", resource: "a", value: 0 }]);
    // The same test as b's: which of the two matches first is their order in the index.
    const a2 = { ...a, name: "a, again" };
    const index = new RuleIndex(undefined, true);
    index.load([a, b, a2]);
    const fresh = new RuleIndex(undefined, true);
    fresh.load([a2, b]);
    expect(index.size).toBe(2);
    expect(answers(index)).toEqual(answers(fresh));
    const appended = new RuleIndex(undefined, true);
    appended.load([b, a2]);
    expect(answers(index)).not.toEqual(answers(appended));
  });
});
