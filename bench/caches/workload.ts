import type { Rule } from "../../src/rules/index.js";

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
