import type { DryRunObservation, Rule, RuleBody } from "../../src/rules/index.js";

/** Rule `i` of a stream of distinct rules: a fused comparison and a value expression, both texts unique to `i`. */
export function distinctRule(i: number): Rule {
  return {
    id: `r${i}`,
    name: "r",
    enabled: true,
    filter: { domain: "acme", thingType: "10" },
    expression: [
      { operator: "gt", resource: "temp", value: `\${thing.state.temp + ${i}}` },
      { operator: "lt", resource: "nested.temp", value: `\${observation.limit * ${i} - 1}` },
    ],
    threshold: { count: 1, interval: 0 },
    actions: [],
  };
}

/** An expression of about `length` characters (a sum of products), its constants unique to `i`. */
function longExpression(i: number, length: number): string {
  const terms: string[] = [];
  for (let k = 0, size = 0; size < length; k++) {
    const term = `thing.state.temp * ${i * 100 + k}`;
    size += term.length + 3;
    if (size < length) terms.push(term);
  }
  return terms.join(" + ");
}

/**
 * Dry run `i` of a stream of distinct ones: a comparison and an action template whose `${}` are
 * about `length` and `length / 2` characters long (1,000 is the longest allowed) and unique to `i`,
 * with two observations that make it trigger, so every compiled piece is built and run.
 */
export function distinctDryRun(i: number, length: number): { body: RuleBody; observations: DryRunObservation[] } {
  return {
    body: {
      name: "dry",
      enabled: true,
      filter: { domain: "acme", thingType: "10" },
      expression: [{ operator: "gt", resource: "temp", value: `\${${longExpression(i, length)}}` }],
      threshold: { count: 1, interval: 0 },
      actions: [
        {
          type: "EVENT",
          config: { classification: "ALARM", message: `m${i} \${${longExpression(i + 1, length / 2)}}` },
        },
      ],
    },
    observations: [
      { thingName: "t1", state: { temp: 1 } },
      { thingName: "t1", state: { temp: 1e15 } },
    ],
  };
}
