import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDms, type TestDms } from "../support/dms.js";
import { json, type Payload } from "../support/http.js";
import { RULES_PROVISION, ruleBody, webhook } from "./fixtures.js";

let t: TestDms;
beforeAll(async () => {
  t = await startTestDms({ provision: RULES_PROVISION, env: { DMS_STACK_NAME: "stk" } });
});
afterAll(() => t.close());

const create = (body: Payload, user = "alice") => t.call("POST", "/rules", { user, body });

async function expectError(res: Response, status: number, messageKey: string, property?: string): Promise<Payload> {
  const body = await json(res);
  expect({ status: res.status, messageKey: body.messageKey, property: body.property }).toEqual({
    status,
    messageKey,
    property,
  });
  return body;
}

describe("Rules CREATE, GET, LIST, UPDATE, REMOVE", () => {
  it("CREATE without id generates a sequential id, zero-padded to 8 and prefixed with the stack name", async () => {
    const a = await create(ruleBody());
    expect(a.status).toBe(200);
    const ra = await json(a);
    const b = await json(await create(ruleBody()));
    expect(ra.id).toMatch(/^stk\d{8}$/);
    expect(Number(b.id.slice(3))).toBe(Number(ra.id.slice(3)) + 1);
    expect(ra).toMatchObject({ ...ruleBody(), readonly: false });
  });

  it("CREATE with an id keeps it; the same id again is RULE_ID_EXISTS", async () => {
    const res = await create(ruleBody({ id: "my-rule" }));
    expect(res.status).toBe(200);
    expect((await json(res)).id).toBe("my-rule");
    await expectError(await create(ruleBody({ id: "my-rule" })), 409, "RULE_ID_EXISTS", "id");
  });

  it("GET answers the rule; an unknown id is RULE_NOT_FOUND naming id", async () => {
    await create(ruleBody({ id: "get-me", category: "cat.1", description: "d" }));
    const res = await t.call("GET", "/rules/get-me", { user: "alice" });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({
      ...ruleBody({ category: "cat.1", description: "d" }),
      id: "get-me",
      readonly: false,
    });
    await expectError(await t.call("GET", "/rules/nope", { user: "alice" }), 404, "RULE_NOT_FOUND", "id");
  });

  it("GET, UPDATE and REMOVE without an id are PROPERTY_REQUIRED naming id", async () => {
    await expectError(await t.call("GET", "/rules/%20", { user: "alice" }), 400, "PROPERTY_REQUIRED", "id");
    await expectError(await t.call("DELETE", "/rules", { user: "alice" }), 400, "PROPERTY_REQUIRED", "id");
    await expectError(
      await t.call("PUT", "/rules", { user: "alice", body: ruleBody() }),
      400,
      "PROPERTY_REQUIRED",
      "id",
    );
    await expectError(await t.call("DELETE", "/rules/%20", { user: "alice" }), 400, "PROPERTY_REQUIRED", "id");
  });

  it("UPDATE replaces the rule; REMOVE deletes it; both answer RULE_NOT_FOUND for unknown ids", async () => {
    await create(ruleBody({ id: "upd" }));
    const res = await t.call("PUT", "/rules/upd", {
      user: "alice",
      body: ruleBody({ name: "renamed", enabled: false }),
    });
    expect(res.status).toBe(200);
    expect(await json(res)).toMatchObject({ id: "upd", name: "renamed", enabled: false });
    expect((await json(await t.call("GET", "/rules/upd", { user: "alice" }))).name).toBe("renamed");
    await expectError(
      await t.call("PUT", "/rules/nope", { user: "alice", body: ruleBody() }),
      404,
      "RULE_NOT_FOUND",
      "id",
    );
    expect((await t.call("DELETE", "/rules/upd", { user: "alice" })).status).toBe(200);
    await expectError(await t.call("GET", "/rules/upd", { user: "alice" }), 404, "RULE_NOT_FOUND", "id");
    await expectError(await t.call("DELETE", "/rules/upd", { user: "alice" }), 404, "RULE_NOT_FOUND", "id");
  });

  it("LIST answers the visible rules with readonly", async () => {
    await create(ruleBody({ id: "listed" }));
    const res = await t.call("GET", "/rules", { user: "alice" });
    expect(res.status).toBe(200);
    const list = await json(res);
    expect(list.find((r: Payload) => r.id === "listed")).toMatchObject({ id: "listed", readonly: false });
  });

  it("emits rule.changed on create, update, remove and bulk update", async () => {
    const seen: (string | null)[] = [];
    const off = t.dms.services.bus.on("rule.changed", (e) =>
      seen.push(e.rule ? `${e.id}:${e.rule.enabled}` : `${e.id}:removed`),
    );
    await create(ruleBody({ id: "bus" }));
    await t.call("PUT", "/rules/bus", { user: "alice", body: ruleBody({ enabled: false }) });
    await t.call("PATCH", "/rules", { user: "alice", body: { rules: [{ id: "bus", enabled: true }] } });
    await t.call("DELETE", "/rules/bus", { user: "alice" });
    off();
    expect(seen).toEqual(["bus:true", "bus:false", "bus:true", "bus:removed"]);
  });
});

describe("Rules BULK UPDATE", () => {
  it("applies what it can and reports each failed rule in errors[]", async () => {
    await create(ruleBody({ id: "b1" }));
    await create(ruleBody({ id: "b2", filter: { domain: "west", thingType: "10" } }));
    const res = await t.call("PATCH", "/rules", {
      user: "eastie",
      body: {
        rules: [
          { id: "b1", enabled: false },
          { id: "missing", enabled: false },
        ],
      },
    });
    expect(res.status).toBe(200);
    const body = await json(res);
    expect(body.updated).toEqual([]);
    expect(body.errors.map((e: Payload) => e.id)).toEqual(["b1", "missing"]);
    const ok = await json(
      await t.call("PATCH", "/rules", {
        user: "alice",
        body: {
          rules: [
            { id: "b1", enabled: false },
            { id: "b2", enabled: false },
            { id: "missing", enabled: true },
          ],
        },
      }),
    );
    expect(ok.updated.map((r: Payload) => [r.id, r.enabled])).toEqual([
      ["b1", false],
      ["b2", false],
    ]);
    expect(ok.errors).toEqual([{ id: "missing", message: "Rule missing not found" }]);
  });

  it("PROPERTY_REQUIRED naming id and enabled of an item", async () => {
    await expectError(
      await t.call("PATCH", "/rules", { user: "alice", body: { rules: [{ enabled: true }] } }),
      400,
      "PROPERTY_REQUIRED",
      "rules.0.id",
    );
    await expectError(
      await t.call("PATCH", "/rules", { user: "alice", body: { rules: [{ id: "b1" }] } }),
      400,
      "PROPERTY_REQUIRED",
      "rules.0.enabled",
    );
  });
});

describe("Rules errors: PROPERTY_REQUIRED, INVALID_ARGUMENTS, INVALID_RULE_CONFIG", () => {
  for (const property of ["name", "filter", "expression", "actions", "threshold", "enabled"]) {
    it(`CREATE without ${property} is PROPERTY_REQUIRED naming ${property}`, async () => {
      const body = ruleBody();
      delete body[property];
      await expectError(await create(body), 400, "PROPERTY_REQUIRED", property);
    });
  }

  it("UPDATE without a required property is PROPERTY_REQUIRED too", async () => {
    await create(ruleBody({ id: "u-req" }));
    const body = ruleBody();
    delete body.threshold;
    await expectError(
      await t.call("PUT", "/rules/u-req", { user: "alice", body }),
      400,
      "PROPERTY_REQUIRED",
      "threshold",
    );
  });

  it("filter.domain and filter.thingType are required", async () => {
    await expectError(
      await create(ruleBody({ filter: { thingType: "10" } })),
      400,
      "PROPERTY_REQUIRED",
      "filter.domain",
    );
    await expectError(
      await create(ruleBody({ filter: { domain: "acme" } })),
      400,
      "PROPERTY_REQUIRED",
      "filter.thingType",
    );
  });

  const invalidCases: [string, Payload, string][] = [
    ["category outside 0-9a-zA-Z.", { category: "bad-cat" }, "category"],
    [
      "an unknown operator",
      { expression: [{ operator: "like", resource: "temp", value: 1 }] },
      "expression.0.operator",
    ],
    [
      "inside on a resource other than latlng",
      {
        expression: [
          {
            operator: "inside",
            resource: "temp",
            value: [
              [0, 0],
              [1, 0],
              [1, 1],
            ],
          },
        ],
      },
      "expression.0.resource",
    ],
    [
      "insidePoi on a resource other than latlng",
      {
        expression: [{ operator: "insidePoi", resource: "pos", value: { center: { lat: "1", lon: "2" }, radius: 5 } }],
      },
      "expression.0.resource",
    ],
    [
      "a perimeter over 25 points",
      {
        expression: [{ operator: "outside", resource: "latlng", value: Array.from({ length: 26 }, (_, i) => [i, i]) }],
      },
      "expression.0.value",
    ],
    [
      "a perimeter point out of range",
      {
        expression: [
          {
            operator: "inside",
            resource: "latlng",
            value: [
              [0, 0],
              [200, 0],
              [1, 1],
            ],
          },
        ],
      },
      "expression.0.value",
    ],
    [
      "a POI without an object",
      { expression: [{ operator: "outsidePoi", resource: "latlng", value: 5 }] },
      "expression.0.value",
    ],
    [
      "a POI with a bad latitude",
      {
        expression: [
          { operator: "enterPoi", resource: "latlng", value: { center: { lat: "x", lon: "2" }, radius: 5 } },
        ],
      },
      "expression.0.value.center.lat",
    ],
    [
      "a value operator with a polygon",
      {
        expression: [
          {
            operator: "gt",
            resource: "temp",
            value: [
              [0, 0],
              [1, 0],
              [1, 1],
            ],
          },
        ],
      },
      "expression.0.value",
    ],
    [
      "a ${} expression that does not parse",
      { expression: [{ operator: "gt", resource: "temp", value: "${thing.state.temp + }" }] },
      "expression.0.value",
    ],
    [
      "an unclosed ${",
      { expression: [{ operator: "gt", resource: "temp", value: "${thing.state.temp" }] },
      "expression.0.value",
    ],
    ["an unknown thing type", { filter: { domain: "acme", thingType: "99" } }, "filter.thingType"],
    ["an unknown thing", { filter: { domain: "acme", thingType: "10", thingNames: ["ghost"] } }, "filter.thingNames"],
    ["a threshold count of 0", { threshold: { count: 0, interval: 0 } }, "threshold.count"],
  ];
  for (const [what, over, property] of invalidCases) {
    it(`INVALID_ARGUMENTS for ${what}`, async () => {
      await expectError(await create(ruleBody(over)), 400, "INVALID_ARGUMENTS", property);
    });
  }

  it("accepts every operator with its value shape", async () => {
    const square = [
      [10, 59],
      [11, 59],
      [11, 60],
      [10, 60],
    ];
    const poi = { center: { lat: "59.9", lon: "10.7" }, radius: 100 };
    const expression = [
      { operator: "gte", resource: "temp", value: "${thing.state.temp + 5}" },
      { operator: "eq", resource: "door.open", value: "1" },
      { operator: "inside", resource: "latlng", value: square },
      { operator: "leave", resource: "latlng", value: square },
      { operator: "insidePoi", resource: "latlng", value: poi },
      { operator: "leavePoi", resource: "latlng", value: poi },
    ];
    const res = await create(ruleBody({ expression }));
    expect(res.status).toBe(200);
    expect((await json(res)).expression).toEqual(expression);
  });

  const configCases: [string, Payload, string][] = [
    // INTERFACE.md: INVALID_RULE_CONFIG is "An action config is invalid"; the type is part of it.
    ["an unknown action type", { type: "FAX", config: {} }, "actions.0.type"],
    ["a webhook without uri", { type: "WEBHOOK", config: { body: "x" } }, "actions.0.config.uri"],
    ["a webhook without body and includeAllEventData", webhook({ body: undefined }), "actions.0.config.body"],
    ["a webhook with a bad method", webhook({ method: "PATCH" }), "actions.0.config.method"],
    [
      "a webhook retry interval over 600",
      webhook({ retry: { interval: 601, maxAttempts: 3, backOffRate: 2 } }),
      "actions.0.config.retry.interval",
    ],
    [
      "a webhook retry interval under 1",
      webhook({ retry: { interval: 0, maxAttempts: 3, backOffRate: 2 } }),
      "actions.0.config.retry.interval",
    ],
    [
      "a webhook retry maxAttempts over 5",
      webhook({ retry: { interval: 3, maxAttempts: 6, backOffRate: 2 } }),
      "actions.0.config.retry.maxAttempts",
    ],
    [
      "a webhook retry backOffRate over 4",
      webhook({ retry: { interval: 3, maxAttempts: 3, backOffRate: 4.5 } }),
      "actions.0.config.retry.backOffRate",
    ],
    [
      "a webhook retry without backOffRate",
      webhook({ retry: { interval: 3, maxAttempts: 3 } }),
      "actions.0.config.retry.backOffRate",
    ],
    ["a webhook to a loopback address", webhook({ uri: "http://127.0.0.1:9/x" }), "actions.0.config.uri"],
    ["a webhook to a private address", webhook({ uri: "http://192.168.1.10/x" }), "actions.0.config.uri"],
    ["a webhook to a link-local address", webhook({ uri: "http://169.254.169.254/latest" }), "actions.0.config.uri"],
    ["a webhook to localhost", webhook({ uri: "http://localhost:8080/x" }), "actions.0.config.uri"],
    ["a webhook with a ${} that does not parse", webhook({ body: "${1 +}" }), "actions.0.config.body"],
    [
      "an SMS number with a plus",
      { type: "SMS", config: { message: "m", addressList: ["+4790000000"] } },
      "actions.0.config.addressList.0",
    ],
    ["an SMS without addressList", { type: "SMS", config: { message: "m" } }, "actions.0.config.addressList"],
    [
      "an e-mail to a non-address",
      { type: "EMAIL", config: { toAddresses: "a@b.c, nope", subject: "s", body: "b" } },
      "actions.0.config.toAddresses",
    ],
    [
      "an EVENT with a bad classification",
      { type: "EVENT", config: { classification: "PANIC", message: "m" } },
      "actions.0.config.classification",
    ],
    [
      "SET_RESOURCE of the reserved type platform",
      { type: "SET_RESOURCE", config: { resource: "platform.x", value: 1 } },
      "actions.0.config.resource",
    ],
    [
      "SET_RESOURCE of the reserved type untyped",
      { type: "SET_RESOURCE", config: { resource: "untyped.x", value: 1 } },
      "actions.0.config.resource",
    ],
    ["SET_RESOURCE without value", { type: "SET_RESOURCE", config: { resource: "alarm" } }, "actions.0.config.value"],
    ["a config that is not an object", { type: "EVENT", config: "x" }, "actions.0.config"],
  ];
  for (const [what, action, property] of configCases) {
    it(`INVALID_RULE_CONFIG for ${what}`, async () => {
      await expectError(await create(ruleBody({ actions: [action] })), 400, "INVALID_RULE_CONFIG", property);
    });
  }
});

describe("SET_RESOURCE limits and the loop check", () => {
  const setter = (id: string, reads: string, sets: string, interval: number, extra: Payload = {}) =>
    ruleBody({
      id,
      expression: [{ operator: "gt", resource: reads, value: 0 }],
      threshold: { count: 1, interval },
      actions: [{ type: "SET_RESOURCE", config: { resource: sets, value: 1 } }],
      ...extra,
    });

  it("a resource set with an interval under 30 s may not appear in another rule of the type", async () => {
    await create(ruleBody({ id: "reads-flag", expression: [{ operator: "eq", resource: "flag", value: 1 }] }));
    await expectError(
      await create(setter("sets-flag", "temp", "flag", 10)),
      400,
      "INVALID_RULE_CONFIG",
      "actions.0.config.resource",
    );
    expect((await create(setter("sets-flag", "temp", "flag", 30))).status).toBe(200);
  });

  it("a rule reading a resource another rule sets with an interval under 30 s is INVALID_RULE", async () => {
    expect((await create(setter("fast-setter", "temp", "fast", 5))).status).toBe(200);
    await expectError(
      await create(ruleBody({ id: "fast-reader", expression: [{ operator: "eq", resource: "fast", value: 1 }] })),
      400,
      "INVALID_RULE",
      "rules",
    );
  });

  it("refuses a rule that closes a cycle, naming it; rules of other types or sibling domains do not chain", async () => {
    expect((await create(setter("loop-a", "l1", "l2", 60))).status).toBe(200);
    expect((await create(setter("loop-b", "l2", "l3", 60))).status).toBe(200);
    const body = await expectError(await create(setter("loop-c", "l3", "l1", 60)), 400, "INVALID_RULE", "rules");
    expect(body.message).toContain("loop-c -> loop-a -> loop-b -> loop-c");
    // The same rule on a thing type the others do not act on closes nothing.
    expect(
      (await create(setter("loop-c", "l3", "l1", 60, { filter: { domain: "east", thingType: "20" } }))).status,
    ).toBe(200);
    // An update that closes the cycle is refused as well.
    await expectError(
      await t.call("PUT", "/rules/loop-c", { user: "alice", body: setter("x", "l3", "l1", 60) }),
      400,
      "INVALID_RULE",
      "rules",
    );
  });

  it("a rule that sets what it reads is a loop of one", async () => {
    const body = await expectError(await create(setter("self", "s1", "s1", 60)), 400, "INVALID_RULE", "rules");
    expect(body.message).toContain("self -> self");
  });
});

describe("Rules privileges", () => {
  it("a Read user sees rules readonly and may not create, update, remove or bulk update", async () => {
    await create(ruleBody({ id: "r-read" }));
    const got = await json(await t.call("GET", "/rules/r-read", { user: "reader" }));
    expect(got.readonly).toBe(true);
    await expectError(await create(ruleBody(), "reader"), 403, "NOT_AUTHORIZED");
    await expectError(
      await t.call("PUT", "/rules/r-read", { user: "reader", body: ruleBody() }),
      403,
      "NOT_AUTHORIZED",
    );
    await expectError(await t.call("DELETE", "/rules/r-read", { user: "reader" }), 403, "NOT_AUTHORIZED");
    const bulk = await json(
      await t.call("PATCH", "/rules", { user: "reader", body: { rules: [{ id: "r-read", enabled: false }] } }),
    );
    expect(bulk.errors.map((e: Payload) => e.id)).toEqual(["r-read"]);
  });

  it("a sibling domain's rules are invisible and untouchable", async () => {
    await create(ruleBody({ id: "r-west", filter: { domain: "west", thingType: "10" } }));
    await expectError(await t.call("GET", "/rules/r-west", { user: "eastie" }), 403, "NOT_AUTHORIZED");
    await expectError(await t.call("DELETE", "/rules/r-west", { user: "eastie" }), 403, "NOT_AUTHORIZED");
    const list = await json(await t.call("GET", "/rules", { user: "eastie" }));
    expect(list.map((r: Payload) => r.id)).not.toContain("r-west");
    await expectError(
      await create(ruleBody({ filter: { domain: "west", thingType: "20" } }), "eastie"),
      403,
      "NOT_AUTHORIZED",
    );
  });

  it("a rule of an ancestor domain is visible and readonly", async () => {
    await create(
      ruleBody({
        id: "r-anc",
        filter: { domain: "acme", thingType: "20" },
        expression: [{ operator: "gt", resource: "power", value: 1 }],
      }),
    );
    await create(
      ruleBody({
        id: "r-own",
        filter: { domain: "east", thingType: "20" },
        expression: [{ operator: "gt", resource: "power", value: 1 }],
      }),
    );
    const list = await json(await t.call("GET", "/rules", { user: "eastie" }));
    const byId = new Map(list.map((r: Payload) => [r.id, r.readonly]));
    expect(byId.get("r-anc")).toBe(true);
    expect(byId.get("r-own")).toBe(false);
    expect((await json(await t.call("GET", "/rules/r-anc", { user: "eastie" }))).readonly).toBe(true);
    await expectError(
      await t.call("PUT", "/rules/r-anc", {
        user: "eastie",
        body: ruleBody({ filter: { domain: "acme", thingType: "20" } }),
      }),
      403,
      "NOT_AUTHORIZED",
    );
  });

  it("rules on a thing type the caller may not read are hidden", async () => {
    await create(ruleBody({ id: "r-type10-east", filter: { domain: "east", thingType: "10" } }));
    const list = await json(await t.call("GET", "/rules", { user: "eastie" }));
    expect(list.map((r: Payload) => r.id)).not.toContain("r-type10-east");
  });

  it("moving a rule needs Rules.DELETE on the old domain and Rules.CREATE on the new", async () => {
    const east = { domain: "east", thingType: "20" };
    const expression = [{ operator: "gt", resource: "power", value: 1 }];
    await create(ruleBody({ id: "r-move", filter: east, expression }));
    const toWest = ruleBody({ filter: { domain: "west", thingType: "20" }, expression });
    await expectError(await t.call("PUT", "/rules/r-move", { user: "updater", body: toWest }), 403, "NOT_AUTHORIZED");
    await expectError(await t.call("PUT", "/rules/r-move", { user: "eastie", body: toWest }), 403, "NOT_AUTHORIZED");
    const moved = await t.call("PUT", "/rules/r-move", { user: "mover", body: toWest });
    expect(moved.status).toBe(200);
    expect((await json(moved)).filter.domain).toBe("west");
    // Updating in place needs only Rules.UPDATE.
    await create(ruleBody({ id: "r-stay", filter: east, expression }));
    const stay = await t.call("PUT", "/rules/r-stay", {
      user: "updater",
      body: ruleBody({ filter: east, expression, name: "n2" }),
    });
    expect(stay.status).toBe(200);
  });

  it("LIST needs Rules.READ on the home domain", async () => {
    expect((await t.call("GET", "/rules", { user: "admin" })).status).toBe(200);
    await expectError(await t.call("GET", "/rules", { user: "nobody" }), 403, "NOT_AUTHORIZED");
  });
});

describe("Rules id generation in production", () => {
  it("generated ids carry no stack prefix when DMS_ENV=production", async () => {
    const prod = await startTestDms({
      provision: RULES_PROVISION,
      env: { DMS_ENV: "production", DMS_STACK_NAME: "stk" },
    });
    try {
      const res = await prod.call("POST", "/rules", { user: "alice", body: ruleBody() });
      expect((await json(res)).id).toBe("00000001");
    } finally {
      await prod.close();
    }
  });
});
