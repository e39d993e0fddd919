import type { ActionSink, TriggeredAction } from "../../src/actions/index.js";
import type { ThingInfo, ThingResolver } from "../../src/engine/index.js";
import type { ExpressionItem, Rule } from "../../src/rules/index.js";

/** The ActionSink seam seen from the engine's side: it keeps what it was handed. */
export class CollectingSink implements ActionSink {
  readonly actions: TriggeredAction[] = [];
  async accept(actions: readonly TriggeredAction[]): Promise<void> {
    this.actions.push(...actions);
  }
}

/**
 * A rule of thing type 10 in acme over `expression` that raises an ALARM event at its first match;
 * `over` replaces any of its fields. The tests' one rule builder.
 */
export function testRule(id: string, expression: ExpressionItem[], over: Partial<Rule> = {}): Rule {
  return {
    id,
    name: id,
    enabled: true,
    filter: { domain: "acme", thingType: "10" },
    expression,
    threshold: { count: 1, interval: 0 },
    actions: [{ type: "EVENT", config: { classification: "ALARM", message: "hot" } }],
    ...over,
  };
}

/** Temperature over 30 on thing type 10 in acme raises an ALARM event at once. */
export const hot: Rule = testRule("hot", [{ operator: "gt", resource: "temp", value: 30 }]);

/** The registry of things `names`, each of thing type 10 in domain acme (under root), with no resource type checks. */
export function acmeThings(names: readonly string[]): ThingResolver {
  const things = new Map<string, ThingInfo>(
    names.map((name) => [
      name,
      { thingName: name, thingType: "10", domain: "acme", domains: new Set(["root", "acme"]), checks: new Map() },
    ]),
  );
  return (name) => things.get(name);
}
