import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startTestDms, type TestDms } from "../support/dms.js";
import { json, type Payload } from "../support/http.js";
import { MailReceiver, ManualClock, Receiver, until } from "../actions/support.js";
import { RULES_PROVISION, ruleBody } from "./fixtures.js";

/** From an observation posted to the service to a real receiver on loopback, through the engine and the outbox. */
const clock = new ManualClock();
let t: TestDms;
let hook: Receiver;
let mail: MailReceiver;
let sms: Receiver;

beforeAll(async () => {
  hook = await new Receiver(clock.now).start();
  mail = await new MailReceiver().start();
  sms = await new Receiver(clock.now).start();
  sms.respond = () => ({ status: 201, body: JSON.stringify({ sid: "SM1" }) });
  t = await startTestDms({
    provision: RULES_PROVISION,
    env: {
      DMS_ROLES: "api,engine,actions",
      DMS_WEBHOOK_ALLOW_PRIVATE: "true",
      SMTP_URL: mail.url,
      TWILIO_ACCOUNT_SID: "ACe2e",
      TWILIO_AUTH_TOKEN: "tok",
      TWILIO_FROM: "+15550002",
      TWILIO_API_URL: sms.url,
    },
    start: { timers: clock, clock: Date.now },
  });
});
afterAll(async () => {
  await t.close();
  await Promise.all([hook.close(), mail.close(), sms.close()]);
});
afterEach(async () => {
  hook.requests.length = 0;
  hook.respond = () => ({ status: 200 });
  for (const r of await json(await t.call("GET", "/rules", { user: "admin" }))) {
    await t.call("DELETE", `/rules/${r.id}`, { user: "admin" });
  }
});

const observe = async (thingName: string, state: Record<string, unknown>): Promise<Payload> => {
  const res = await t.call("POST", "/observations", {
    user: "admin",
    body: [{ thingName, timestamp: Date.now(), state }],
  });
  expect(res.status).toBe(200);
  return json(res);
};
const createRule = async (body: Payload): Promise<Payload> => {
  const res = await t.call("POST", "/rules", { user: "alice", body });
  expect(res.status).toBe(200);
  return json(res);
};
const delivery = (ruleId: string): Payload =>
  t.dms.services.db!.prepare("SELECT * FROM action_outbox WHERE rule_id = ? ORDER BY id DESC").get(ruleId);

describe("observation -> rule -> receiver", () => {
  it("a webhook receiver that fails twice then succeeds gets three attempts, 3 s and 6 s apart, with one Idempotency-Key", async () => {
    hook.respond = (_r, n) => ({ status: n <= 2 ? 502 : 200 });
    const rule = await createRule(
      ruleBody({
        actions: [
          {
            type: "WEBHOOK",
            config: {
              uri: `${hook.url}/hot`,
              body: "${thing.thingName} at ${observation.temp}",
              retry: { interval: 3, maxAttempts: 3, backOffRate: 2 },
            },
          },
        ],
      }),
    );
    expect(await observe("t1", { temp: 31 })).toMatchObject({ triggered: 1 });
    const settled = (n: number) =>
      until(() => delivery(rule.id)?.attempts === n && delivery(rule.id).status !== "delivering", `attempt ${n}`);
    await settled(1);
    clock.advance(3000);
    await settled(2);
    clock.advance(6000);
    await settled(3);
    expect(delivery(rule.id).status).toBe("delivered");
    const times = hook.requests.map((r) => r.at);
    expect([times[1]! - times[0]!, times[2]! - times[1]!]).toEqual([3000, 6000]);
    const keys = new Set(hook.requests.map((r) => r.headers["idempotency-key"]));
    expect(keys.size).toBe(1);
    expect([...keys][0]).toMatch(new RegExp(`^${rule.id}:t1:.+:0$`));
    expect(hook.requests.map((r) => r.body)).toEqual(["t1 at 31", "t1 at 31", "t1 at 31"]);
  });

  it("a receiver that always fails leaves a dead letter; retried from the API it is delivered", async () => {
    hook.respond = () => ({ status: 500 });
    const rule = await createRule(
      ruleBody({
        actions: [
          {
            type: "WEBHOOK",
            config: { uri: hook.url, body: "x", retry: { interval: 1, maxAttempts: 1, backOffRate: 1 } },
          },
        ],
      }),
    );
    await observe("t1", { temp: 50 });
    await until(() => delivery(rule.id)?.attempts === 1 && delivery(rule.id).status === "pending", "first failure");
    clock.advance(1000);
    await until(() => delivery(rule.id)?.status === "dead", "dead letter");
    const list = await json(await t.call("GET", "/actions/dead-letters", { user: "alice" }));
    const dead = list.deadLetters.find((d: Payload) => d.ruleId === rule.id);
    expect(dead).toMatchObject({ status: "dead", attempts: 2, lastError: expect.stringContaining("HTTP 500") });
    hook.respond = () => ({ status: 200 });
    expect((await t.call("POST", `/actions/dead-letters/${dead.id}/retry`, { user: "alice" })).status).toBe(200);
    await until(() => delivery(rule.id).status === "delivered", "redelivery");
    expect(hook.requests).toHaveLength(3);
  });

  it("an smtp-server receives the rule's e-mail and the SMS provider API the twilio client's request", async () => {
    clock.advance(5000); // clear of the SMS per-second window of other tests
    await createRule(
      ruleBody({
        actions: [
          {
            type: "EMAIL",
            config: {
              toAddresses: "ops@example.com",
              subject: "${thing.thingName} is hot",
              body: "temp ${observation.temp}",
            },
          },
          { type: "SMS", config: { message: "${thing.thingName}: ${observation.temp}", addressList: ["4791234567"] } },
        ],
      }),
    );
    await observe("t2", { temp: 44 });
    await until(() => mail.mails.length === 1 && sms.requests.length === 1, "e-mail and SMS");
    expect(mail.mails[0]!.to).toEqual(["ops@example.com"]);
    expect(mail.mails[0]!.data).toContain("Subject: t2 is hot");
    expect(mail.mails[0]!.data).toContain("temp 44");
    const form = new URLSearchParams(sms.requests[0]!.body);
    expect([form.get("To"), form.get("Body")]).toEqual(["+4791234567", "t2: 44"]);
  });

  it("an EVENT is listed by GET /events with the rule's category", async () => {
    await createRule(
      ruleBody({
        category: "heat.alarm",
        actions: [
          {
            type: "EVENT",
            config: {
              classification: "ALARM",
              message: "${thing.thingName} ${observation.temp}",
              acknowledgmentRequired: true,
            },
          },
        ],
      }),
    );
    await observe("t1", { temp: 77 });
    let events: Payload[] = [];
    await until(() => {
      void t
        .call("GET", "/events?category=heat.alarm", { user: "alice" })
        .then(async (r) => (events = (await json(r)).events));
      return events.length === 1;
    }, "the event");
    expect(events[0]).toMatchObject({
      thingName: "t1",
      category: "heat.alarm",
      message: "t1 77",
      classification: "ALARM",
    });
  });

  it("SET_RESOURCE feeds back into the engine and triggers a second rule", async () => {
    await createRule(
      ruleBody({
        id: "set-alarm",
        threshold: { count: 1, interval: 30 },
        actions: [{ type: "SET_RESOURCE", config: { resource: "alarm", value: "${observation.temp}" } }],
      }),
    );
    await createRule(
      ruleBody({
        id: "on-alarm",
        expression: [{ operator: "gt", resource: "alarm", value: 0 }],
        actions: [
          {
            type: "WEBHOOK",
            config: { uri: `${hook.url}/chained`, body: "alarm ${observation.alarm} on ${thing.thingName}" },
          },
        ],
      }),
    );
    await observe("t2", { temp: 39 });
    await until(() => hook.requests.length === 1, "the chained webhook");
    expect(hook.requests[0]).toMatchObject({ url: "/chained", body: "alarm 39 on t2" });
  });

  it("SET_RESOURCE feedback (only the resource it set) does not reset another rule's count on the thing type", async () => {
    await createRule(
      ruleBody({
        id: "set-pressure",
        expression: [{ operator: "gt", resource: "hum", value: 1 }],
        actions: [{ type: "SET_RESOURCE", config: { resource: "pressure", value: 7 } }],
      }),
    );
    await createRule(
      ruleBody({
        id: "humid",
        expression: [{ operator: "gte", resource: "hum", value: 80 }],
        threshold: { count: 3, interval: 0 },
        actions: [{ type: "WEBHOOK", config: { uri: `${hook.url}/humid`, body: "${thing.thingName}" } }],
      }),
    );
    const fedBack = t.dms.services.db!.prepare<[], { n: number }>(
      "SELECT count(*) AS n FROM action_outbox WHERE rule_id = 'set-pressure' AND status = 'delivered'",
    );
    for (let i = 1; i <= 3; i++) {
      // The third reading is the third consecutive match of `humid`: it triggers beside set-pressure.
      expect(await observe("t2", { hum: 85 })).toMatchObject({ accepted: 1, triggered: i === 3 ? 2 : 1 });
      // Each match's feedback ({pressure: 7} alone) is evaluated before the next humidity reading.
      await until(() => fedBack.get()!.n === i, `feedback ${i}`);
    }
    await until(() => hook.requests.some((r) => r.url === "/humid"), "the count rule firing on the third reading");
    expect(hook.requests.filter((r) => r.url === "/humid")).toHaveLength(1);
  });

  it("SET_RESOURCE of <type>.<resource> sets it on every nested object of that type", async () => {
    await createRule(
      ruleBody({
        id: "lock-doors",
        threshold: { count: 1, interval: 30 },
        actions: [{ type: "SET_RESOURCE", config: { resource: "door.locked", value: 1 } }],
      }),
    );
    await createRule(
      ruleBody({
        id: "on-locked",
        expression: [{ operator: "eq", resource: "door.locked", value: 1 }],
        actions: [{ type: "WEBHOOK", config: { uri: `${hook.url}/locked`, body: "${thing.thingName}" } }],
      }),
    );
    const res = await t.call("POST", "/observations", {
      user: "admin",
      body: [
        {
          thingName: "t1",
          timestamp: Date.now(),
          state: { temp: 45 },
          nested: [
            { type: "door", id: "front", state: { open: 0 } },
            { type: "door", id: "back", state: { open: 1 } },
          ],
        },
      ],
    });
    expect(res.status).toBe(200);
    await until(() => hook.requests.some((r) => r.url === "/locked"), "the chained webhook");
    const state = t.dms.services.engine!.engine.thingState("t1")!;
    expect(state.nested?.filter((n) => n.type === "door").map((n) => [n.id, n.state.locked])).toEqual([
      ["front", 1],
      ["back", 1],
    ]);
  });

  it("a rule change reaches the running engine: a disabled rule no longer triggers", async () => {
    const rule = await createRule(ruleBody({ actions: [{ type: "WEBHOOK", config: { uri: hook.url, body: "x" } }] }));
    await t.call("PATCH", "/rules", { user: "alice", body: { rules: [{ id: rule.id, enabled: false }] } });
    expect(await observe("t1", { temp: 99 })).toMatchObject({ triggered: 0 });
  });
});

describe("POST /rules/test (dry run)", () => {
  it("answers which observations would trigger and the substituted configs, storing and sending nothing", async () => {
    const before = t.dms.services.db!.prepare("SELECT count(*) AS n FROM action_outbox").get() as { n: number };
    const res = await t.call("POST", "/rules/test", {
      user: "alice",
      body: {
        rule: ruleBody({
          threshold: { count: 2, interval: 0 },
          expression: [{ operator: "gt", resource: "temp", value: "${1 + 7}" }],
          actions: [
            {
              type: "WEBHOOK",
              config: {
                uri: `${hook.url}/\${thing.thingName}`,
                body: "${observation.temp} after ${thing.state.temp}${thing.state.nope}",
              },
            },
          ],
        }),
        observations: [10, 11, 12, 5, 9, 9].map((temp, i) => ({
          thingName: "t1",
          timestamp: 1000 * (i + 1),
          state: { temp },
        })),
      },
    });
    expect(res.status).toBe(200);
    const report = await json(res);
    // Two consecutive matches trigger, then the counter starts over; a miss resets it.
    expect(report.results.map((r: Payload) => r.matched)).toEqual([true, true, true, false, true, true]);
    expect(report.results.map((r: Payload) => r.triggered)).toEqual([false, true, false, false, false, true]);
    const fired = report.results.filter((r: Payload) => r.triggered);
    expect(fired[0].actions).toEqual([{ type: "WEBHOOK", config: { uri: `${hook.url}/t1`, body: "11 after 10" } }]);
    expect(fired[0].unknownVariables).toEqual(["thing.state.nope"]);
    expect(report.triggeredCount).toBe(2);
    const after = t.dms.services.db!.prepare("SELECT count(*) AS n FROM action_outbox").get() as { n: number };
    expect(after.n).toBe(before.n);
    expect(await json(await t.call("GET", "/rules", { user: "alice" }))).toEqual([]);
    expect(hook.requests).toHaveLength(0);
  });

  it("validates the rule as CREATE does and checks Rules.READ on its domain", async () => {
    const bad = await t.call("POST", "/rules/test", {
      user: "alice",
      body: { rule: ruleBody({ category: "no-dash" }), observations: [{ state: { temp: 1 } }] },
    });
    expect((await json(bad)).messageKey).toBe("INVALID_ARGUMENTS");
    const forbidden = await t.call("POST", "/rules/test", {
      user: "eastie",
      body: { rule: ruleBody({ filter: { domain: "west", thingType: "10" } }), observations: [{ state: { temp: 1 } }] },
    });
    expect((await json(forbidden)).messageKey).toBe("NOT_AUTHORIZED");
    const missing = await t.call("POST", "/rules/test", { user: "alice", body: { rule: ruleBody() } });
    expect(await json(missing)).toMatchObject({ messageKey: "PROPERTY_REQUIRED", property: "observations" });
  });
});
