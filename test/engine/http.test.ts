import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDms, type TestDms } from "../support/dms.js";
import { json } from "../support/http.js";
import { CollectingSink, hot as rule } from "./support.js";

let t: TestDms;
const sink = new CollectingSink();

beforeAll(async () => {
  t = await startTestDms({ env: { DMS_ROLES: "api,engine" }, start: { actionSink: sink } });
  t.dms.services.bus.emit("rule.changed", { id: rule.id, rule });
});
afterAll(() => t.close());

describe("POST /observations", () => {
  it("answers after the batch is stored and evaluated, reporting each rejected item", async () => {
    const before = await t.dms.services.observations.count();
    const res = await t.call("POST", "/observations", {
      user: "admin",
      body: [
        { thingName: "t1", timestamp: 1763000000000, state: { temp: 31, latlng: "59.91,10.75" } },
        { thingName: "t1", timestamp: "not a time", state: { temp: 31 } },
        { thingName: "ghost", timestamp: 1763000000000, state: {} },
        { thingName: "t2", timestamp: "2025-11-13T02:13:20Z", state: { temp: 12 } },
      ],
    });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({
      accepted: 2,
      triggered: 1,
      rejected: [
        { index: 1, messageKey: "INVALID_ARGUMENTS", reason: "bad-timestamp", message: expect.any(String) },
        { index: 2, messageKey: "THING_NOT_FOUND", reason: "unknown-thing", message: expect.any(String) },
      ],
    });
    expect(await t.dms.services.observations.count()).toBe(before + 2);
    expect(sink.actions.map((a) => a.ruleId)).toEqual(["hot"]);
    expect(sink.actions[0]!.idempotencyKey).toMatch(/^hot:t1:http:[0-9a-f-]{36}:0$/);
  });

  it("a user without Observations.CREATE on the thing's domain is refused for that item", async () => {
    const res = await t.call("POST", "/observations", {
      user: "eastie",
      body: [
        { thingName: "t1", timestamp: 1763000000000, state: { temp: 1 } },
        { thingName: "e1", timestamp: 1763000000000, state: { power: 1 } },
      ],
    });
    expect(await json(res)).toEqual({
      accepted: 1,
      triggered: 0,
      rejected: [{ index: 0, messageKey: "NOT_AUTHORIZED", reason: "NOT_AUTHORIZED", message: expect.any(String) }],
    });
  });

  it("a body that is not an array is INVALID_ARGUMENTS; a Read user is NOT_AUTHORIZED", async () => {
    const res = await t.call("POST", "/observations", { user: "admin", body: { thingName: "t1" } });
    expect(res.status).toBe(400);
    expect((await json(res)).messageKey).toBe("INVALID_ARGUMENTS");
    const read = await t.call("POST", "/observations", { user: "reader", body: [] });
    expect(read.status).toBe(403);
  });

  it("a rule change through the bus is picked up by the next request", async () => {
    t.dms.services.bus.emit("rule.changed", {
      id: "cold",
      rule: { ...rule, id: "cold", expression: [{ operator: "lt", resource: "temp", value: 0 }] },
    });
    const res = await t.call("POST", "/observations", {
      user: "admin",
      body: [{ thingName: "t2", timestamp: 1763000000001, state: { temp: -5 } }],
    });
    expect((await json(res)).triggered).toBe(1);
    t.dms.services.bus.emit("rule.changed", { id: "cold", rule: null });
    const again = await t.call("POST", "/observations", {
      user: "admin",
      body: [{ thingName: "t2", timestamp: 1763000000002, state: { temp: -5 } }],
    });
    expect((await json(again)).triggered).toBe(0);
  });
});

describe("ObservationIngest (MQTT bridge, SET_RESOURCE)", () => {
  it("stores and evaluates what it is given, and resolves after that", async () => {
    const before = await t.dms.services.observations.count();
    const handed = sink.actions.length;
    await t.dms.services.ingest!([{ thingName: "t1", timestamp: 1763000000100, state: { temp: 35 } }], "set-resource");
    expect(await t.dms.services.observations.count()).toBe(before + 1);
    expect(sink.actions.length).toBe(handed + 1);
    expect(sink.actions[handed]!.payload.observation.id).toMatch(/^set-resource:[0-9a-f-]{36}$/);
  });
});

describe("GET /observations/dead-letters", () => {
  it("lists dead letters newest first with reason and source; a thing's domain limits who sees it", async () => {
    const res = await t.call("GET", "/observations/dead-letters?size=10", { user: "admin" });
    expect(res.status).toBe(200);
    const body = await json(res);
    expect(body.deadLetters.map((d: { reason: string }) => d.reason)).toEqual(["unknown-thing", "bad-timestamp"]);
    expect(body.deadLetters[1]).toMatchObject({
      source: "http",
      thingName: "t1",
      domain: "acme",
      payload: expect.stringContaining("not a time"),
    });

    const alice = await json(await t.call("GET", "/observations/dead-letters", { user: "alice" }));
    expect(alice.deadLetters.map((d: { reason: string }) => d.reason)).toEqual(["bad-timestamp"]);
    const page = await json(await t.call("GET", "/observations/dead-letters?size=1", { user: "admin" }));
    expect(page.pageInfo).toEqual({ size: 1, marker: expect.any(Number) });
  });

  it("counts dead letters in /metrics", async () => {
    const text = await (await fetch(`${t.url}/metrics`)).text();
    expect(text).toMatch(/dms_engine_dead_letters_total\{reason="unknown-thing"\} 1/);
    expect(text).toMatch(/dms_engine_rules 1/);
  });
});

// One decode, then authorize: whatever shape an item has, what is authorized is what is evaluated.
describe("an item is decoded once, and the decoded thing is authorized", () => {
  const forT1 = { thingName: "t1", timestamp: 1763000000500, state: { temp: 99 } };
  const cases: [string, unknown][] = [
    ["a JSON string encoding it", JSON.stringify(forT1)],
    ["a schema-registry envelope", { decoded: forT1 }],
    ["an array holding it", [forT1]],
    ["a nested string", { observation: JSON.stringify(forT1) }],
  ];
  it.each(cases)("%s, for a thing of another domain, changes nothing there", async (_what, item) => {
    const before = await t.dms.services.observations.count();
    const handed = sink.actions.length;
    const stateBefore = JSON.stringify(t.dms.services.engine!.engine.thingState("t1"));
    const res = await t.call("POST", "/observations", { user: "eastie", body: [item] });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({
      accepted: 0,
      triggered: 0,
      rejected: [
        { index: 0, messageKey: "INVALID_ARGUMENTS", reason: expect.any(String), message: expect.any(String) },
      ],
    });
    expect(await t.dms.services.observations.count()).toBe(before);
    expect(sink.actions.length).toBe(handed);
    expect(JSON.stringify(t.dms.services.engine!.engine.thingState("t1"))).toBe(stateBefore);
  });

  it("items that are not objects are each their own INVALID_ARGUMENTS; the others are stored and evaluated", async () => {
    const before = await t.dms.services.observations.count();
    const handed = sink.actions.length;
    const good = (ts: number) => ({ thingName: "t2", timestamp: ts, state: { temp: 40 } });
    const res = await t.call("POST", "/observations", {
      user: "admin",
      body: [null, good(1763000000601), 42, "text", [good(1763000000602)], true, good(1763000000603), {}],
    });
    expect(res.status).toBe(200);
    const body = await json(res);
    expect(body).toMatchObject({ accepted: 2, triggered: 2 });
    expect(body.rejected.map((r: { index: number; messageKey: string }) => [r.index, r.messageKey])).toEqual([
      [0, "INVALID_ARGUMENTS"],
      [2, "INVALID_ARGUMENTS"],
      [3, "INVALID_ARGUMENTS"],
      [4, "INVALID_ARGUMENTS"],
      [5, "INVALID_ARGUMENTS"],
      [7, "INVALID_ARGUMENTS"],
    ]);
    expect(body.rejected[0]).toMatchObject({
      reason: "invalid-observation",
      message: "an observation is a JSON object",
    });
    expect(body.rejected[5]).toMatchObject({ reason: "missing-thing-name" });
    expect(await t.dms.services.observations.count()).toBe(before + 2);
    expect(sink.actions.slice(handed).map((a) => a.payload.observation.timestamp)).toEqual([
      1763000000601, 1763000000603,
    ]);
  });

  it("an invalid item naming another domain's thing is NOT_AUTHORIZED, not a dead letter of that domain", async () => {
    const res = await t.call("POST", "/observations", {
      user: "eastie",
      body: [{ thingName: "t1", timestamp: "not a time", state: {} }],
    });
    expect((await json(res)).rejected).toEqual([
      { index: 0, messageKey: "NOT_AUTHORIZED", reason: "NOT_AUTHORIZED", message: expect.any(String) },
    ]);
  });
});
