import type { ActionSink, TriggeredAction } from "../../src/actions/index.js";
import type { Rule } from "../../src/rules/index.js";

/** The ActionSink seam seen from the engine's side: it keeps what it was handed. */
export class CollectingSink implements ActionSink {
  readonly actions: TriggeredAction[] = [];
  async accept(actions: readonly TriggeredAction[]): Promise<void> {
    this.actions.push(...actions);
  }
}

/** Temperature over 30 on thing type 10 in acme raises an ALARM event at once. */
export const hot: Rule = {
  id: "hot",
  name: "hot",
  enabled: true,
  filter: { domain: "acme", thingType: "10" },
  expression: [{ operator: "gt", resource: "temp", value: 30 }],
  threshold: { count: 1, interval: 0 },
  actions: [{ type: "EVENT", config: { classification: "ALARM", message: "hot" } }],
};
