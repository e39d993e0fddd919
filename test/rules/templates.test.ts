import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDms, type TestDms } from "../support/dms.js";
import { json, type Payload } from "../support/http.js";
import { RULES_PROVISION, ruleBody } from "./fixtures.js";

// Action `${...}` templates must not reach mathjs' dangerous functions (evaluate, parse, simplify,
// createUnit, sum(range(...))) or a shared mathjs instance: they compile with the rule-value
// whitelist and budget (src/engine/compile/expression.ts).

let t: TestDms;
beforeAll(async () => {
  t = await startTestDms({ provision: RULES_PROVISION });
});
afterAll(() => t.close());

const event = (message: string): Payload => ({ type: "EVENT", config: { classification: "ALARM", message } });

/** A dry run of one EVENT action against one observation: the rendered message and unknown variables. */
async function dryRun(user: string, thingType: string, domain: string, message: string, state: Payload) {
  const res = await t.call("POST", "/rules/test", {
    user,
    body: {
      rule: ruleBody({
        filter: { domain, thingType },
        expression: [{ operator: "gt", resource: "temp", value: 0 }],
        actions: [event(message)],
      }),
      observations: [{ thingName: thingType === "10" ? "t1" : "e1", state }],
    },
  });
  return { status: res.status, body: await json(res) };
}

describe("action templates compile with the rule-value whitelist", () => {
  const refused = [
    '${evaluate("1 + 1")}',
    '${parse("x").compile().evaluate()}',
    '${simplify("2x + x")}',
    '${createUnit("dmsfoo")}',
    "${import({ f: 1 }, { override: true })}",
    "${sum(range(1, 1e7))}",
    "${range(1, 1e9)}",
    "${f(x) = x}",
    "${x = 5}",
    "${[1, 2, 3]}",
    "${{a: 1}}",
    "${a; b}",
    `\${${"1 + ".repeat(150)}1}`, // over the per-expression budget of terms
    `\${"${"x".repeat(1000)}"}`, // over the length budget
    "${1}".repeat(101), // over the variables of one string
  ];
  for (const message of refused) {
    it(`refuses ${message.slice(0, 40)} at CREATE and in the dry run with INVALID_RULE_CONFIG naming the property`, async () => {
      const create = await t.call("POST", "/rules", { user: "alice", body: ruleBody({ actions: [event(message)] }) });
      expect(create.status).toBe(400);
      expect(await json(create)).toMatchObject({
        messageKey: "INVALID_RULE_CONFIG",
        property: "actions.0.config.message",
      });
      const run = await dryRun("alice", "10", "acme", message, { temp: 1 });
      expect(run).toMatchObject({
        status: 400,
        body: { messageKey: "INVALID_RULE_CONFIG", property: "actions.0.config.message" },
      });
    });
  }

  it("refuses more variables in one action than its budget, over all its strings", async () => {
    const many = "${observation.temp}".repeat(60);
    const body = ruleBody({
      actions: [
        {
          type: "WEBHOOK",
          config: {
            uri: "https://hooks.example.com/x",
            body: many,
            additionalHeaders: [1, 2, 3, 4].map((i) => ({ header: `x-${i}`, value: many })),
          },
        },
      ],
    });
    const res = await t.call("POST", "/rules", { user: "alice", body });
    expect(await json(res)).toMatchObject({
      messageKey: "INVALID_RULE_CONFIG",
      property: "actions.0.config.additionalHeaders.2.value",
    });
  });

  it("still renders arithmetic, comparisons and plain functions over the payload", async () => {
    const run = await dryRun(
      "alice",
      "10",
      "acme",
      '${observation.temp * 1.8 + 32} ${observation.temp > 10 ? "hot" : "cold"} ${round(max(abs(observation.temp), 2) / 3, 2)} ${thing.thingName}',
      { temp: 20 },
    );
    expect(run.status).toBe(200);
    expect(run.body.results[0].actions).toEqual([
      { type: "EVENT", config: { classification: "ALARM", message: "68 hot 6.67 t1" } },
    ]);
    // A value with its own type when the string is one ${...}.
    const whole = await dryRun("alice", "10", "acme", "${observation.temp / 4}", { temp: 20 });
    expect(whole.body.results[0].actions[0].config.message).toBe(5);
  });

  it("arithmetic over a missing or non-numeric name is an unknown variable, rendered empty", async () => {
    const run = await dryRun("alice", "10", "acme", "a${observation.nope + 1}b${thing.thingName * 2}c", { temp: 5 });
    expect(run.body.results[0].actions[0].config.message).toBe("abc");
    expect(run.body.results[0].unknownVariables).toEqual(["observation.nope + 1", "thing.thingName * 2"]);
  });

  it("no tenant's template changes what another's renders: there is no shared mathjs to change", async () => {
    // Before: alice's createUnit defined `dmsfoo` in the one mathjs instance, and eastie's template then rendered "3 dmsfoo".
    const define = await dryRun("alice", "10", "acme", '${createUnit("dmsfoo")}', { temp: 1 });
    expect(define.body.messageKey).toBe("INVALID_RULE_CONFIG");
    const use = await dryRun("eastie", "20", "east", "v=${3 dmsfoo}", { temp: 1 });
    expect(use.status).toBe(200);
    expect(use.body.results[0].actions[0].config.message).toBe("v=");
    expect(use.body.results[0].unknownVariables).toEqual(["3 dmsfoo"]);
    // mathjs' own units and constants are names like any other: unknown, not a value from a library's state.
    const units = await dryRun("eastie", "20", "east", "${2 cm + 1}|${pi}", { temp: 1 });
    expect(units.body.results[0].actions[0].config.message).toBe("|");
  });
});
