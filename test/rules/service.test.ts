import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  CreateRuleBodySchema,
  RuleBodySchema,
  SqliteRuleStore,
  createRules,
  type Rules,
} from "../../src/rules/index.js";
import { openParts, refusal, type Parts } from "../support/parts.js";
import { RULES_PROVISION, ruleBody } from "./fixtures.js";

/** The rules' access rules, checked on the rules capability made from its parts (no service, no HTTP). */

let parts: Parts;
let rules: Rules;

beforeAll(async () => {
  parts = await openParts({
    users: [
      ...RULES_PROVISION.users!.filter((u) => ["mover", "nobody"].includes(u.userName)),
      // Rules of east, and thing type 10 (of acme) readable.
      {
        userName: "watcher",
        password: "watcher-pw",
        role: "ReadWrite",
        homeDomain: "east",
        privileges: { east: ["Rules.*"], acme: ["ThingTypes.READ"] },
      },
    ],
  });
  rules = createRules({ ...parts, store: new SqliteRuleStore(parts.db, "test"), allowPrivateWebhooks: false });
});
afterAll(() => parts.close());

const create = (over: Record<string, unknown> = {}) => CreateRuleBodySchema.parse(ruleBody(over));

describe("rules: access checks in the service", () => {
  it("CREATE needs a ReadWrite user with Rules.CREATE and Domains.READ on the filter's domain", async () => {
    expect(await refusal(() => rules.service.create(parts.as("reader"), create()))).toBe("NOT_AUTHORIZED");
    expect(await refusal(() => rules.service.create(parts.as("eastie"), create()))).toBe("NOT_AUTHORIZED");
    const made = await rules.service.create(parts.as("alice"), create({ id: "acme-hot" }));
    expect(made).toMatchObject({ id: "acme-hot", readonly: false });
    expect((await rules.store.get("acme-hot"))?.filter.domain).toBe("acme");
  });

  it("a rule of a domain above is seen read-only from below; its thing type must be readable too", async () => {
    // watcher (rules of east) sees acme's rule, which acts on east's things, but may not change it.
    expect((await rules.service.get(parts.as("watcher"), "acme-hot")).readonly).toBe(true);
    expect((await rules.service.list(parts.as("watcher"))).map((r) => r.id)).toContain("acme-hot");
    expect(await refusal(() => rules.service.remove(parts.as("watcher"), "acme-hot"))).toBe("NOT_AUTHORIZED");
    // eastie holds everything on east but cannot read thing type 10: the rule is not its to see.
    expect(await refusal(() => rules.service.get(parts.as("eastie"), "acme-hot"))).toBe("NOT_AUTHORIZED");
    expect((await rules.service.list(parts.as("eastie"))).map((r) => r.id)).not.toContain("acme-hot");
    expect(await refusal(() => rules.service.get(parts.as("nobody"), "acme-hot"))).toBe("NOT_AUTHORIZED");
    expect(await refusal(() => rules.service.list(parts.as("nobody")))).toBe("NOT_AUTHORIZED");
  });

  it("moving a rule needs DELETE where it was and CREATE (with Domains.READ) where it goes", async () => {
    const eastRule = await rules.service.create(
      parts.as("eastie"),
      create({
        id: "east-hot",
        filter: { domain: "east", thingType: "20" },
        expression: [{ operator: "gt", resource: "power", value: 1 }],
      }),
    );
    expect(eastRule.filter.domain).toBe("east");
    const toWest = RuleBodySchema.parse(
      ruleBody({
        filter: { domain: "west", thingType: "20" },
        expression: [{ operator: "gt", resource: "power", value: 1 }],
        name: "moved",
      }),
    );
    // eastie holds nothing on west; mover holds Rules.* on east and Rules.CREATE on west.
    expect(await refusal(() => rules.service.update(parts.as("eastie"), "east-hot", toWest))).toBe("NOT_AUTHORIZED");
    expect((await rules.service.update(parts.as("mover"), "east-hot", toWest)).filter.domain).toBe("west");
  });
});
