import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Observation } from "../../src/engine/index.js";
import { migrations } from "../../src/migrations.js";
import { openDatabase } from "../../src/store/index.js";
import { startTestDms, type TestDms } from "../support/dms.js";
import { standaloneOutbox } from "../support/outbox.js";
import { json, type Payload } from "../support/http.js";
import { MailReceiver, ManualClock, Receiver, triggered, until } from "./support.js";

const clock = new ManualClock();
let t: TestDms;
let mail: MailReceiver;
let sms: Receiver;

beforeAll(async () => {
  mail = await new MailReceiver().start();
  sms = await new Receiver(clock.now).start();
  sms.respond = () => ({ status: 201, body: JSON.stringify({ sid: "SM0001", status: "queued" }) });
  t = await startTestDms({
    env: {
      DMS_ROLES: "api,actions",
      DMS_WEBHOOK_ALLOW_PRIVATE: "true",
      SMTP_URL: mail.url,
      SMTP_FROM: "dms@example.com",
      TWILIO_ACCOUNT_SID: "ACtest0001",
      TWILIO_AUTH_TOKEN: "twilio-token",
      TWILIO_FROM: "+15550001",
      TWILIO_API_URL: sms.url,
      DMS_SMS_PER_SECOND: "1",
    },
    start: { timers: clock, clock: Date.now },
  });
});
afterAll(async () => {
  await t.close();
  await mail.close();
  await sms.close();
});

const outbox = () => t.dms.services.actions;
const status = (key: string): Payload =>
  t.dms.services.db!.prepare("SELECT * FROM action_outbox WHERE idempotency_key = ?").get(key);

describe("EMAIL", () => {
  it("an smtp-server receives the substituted e-mail", async () => {
    const action = triggered("EMAIL", {
      toAddresses: "ops@example.com, ${thing.thingName}@example.com",
      subject: "Hot: ${thing.thingName}",
      body: "temp is ${observation.temp} (was ${thing.state.temp})",
    });
    await outbox().accept([action]);
    await until(() => mail.mails.length === 1, "the e-mail");
    const m = mail.mails[0]!;
    expect(m.from).toBe("dms@example.com");
    expect(m.to).toEqual(["ops@example.com", "t1@example.com"]);
    expect(m.data).toContain("Subject: Hot: t1");
    expect(m.data).toContain("temp is 35 (was 20)");
    await until(() => status(action.idempotencyKey).status === "delivered", "delivered");
  });
});

describe("SMS", () => {
  it("the provider API receives the twilio client's request: +msisdn, truncated at 160, one a second", async () => {
    const long = `${"x".repeat(150)} \${thing.thingName} ${"y".repeat(40)}`;
    const a = triggered("SMS", { message: long, addressList: ["4790000001"] });
    const b = triggered("SMS", { message: "second", addressList: ["4790000002"] });
    await outbox().accept([a, b]);
    await until(() => sms.requests.length === 1, "first SMS");
    await until(
      () => status(b.idempotencyKey).status === "pending" && status(a.idempotencyKey).status === "delivered",
      "second deferred",
    );
    await new Promise((r) => setTimeout(r, 30));
    expect(sms.requests).toHaveLength(1);
    clock.advance(1000);
    await until(() => sms.requests.length === 2, "second SMS");

    const [first, second] = sms.requests.map((r) => ({ ...r, form: new URLSearchParams(r.body) }));
    expect(first!.method).toBe("POST");
    expect(first!.url).toBe("/2010-04-01/Accounts/ACtest0001/Messages.json");
    expect(first!.headers.authorization).toBe(`Basic ${Buffer.from("ACtest0001:twilio-token").toString("base64")}`);
    expect(first!.form.get("To")).toBe("+4790000001");
    expect(first!.form.get("From")).toBe("+15550001");
    const body = first!.form.get("Body")!;
    expect(body).toHaveLength(160);
    expect(body).toBe(`${"x".repeat(150)} t1 yyyyyy`);
    expect(second!.form.get("To")).toBe("+4790000002");
    expect(second!.at - first!.at).toBe(1000);
    await until(() => status(b.idempotencyKey).status === "delivered", "delivered");
    expect(status(b.idempotencyKey).attempts).toBe(1);
  });

  it("a provider error is retried", async () => {
    sms.requests.length = 0;
    clock.advance(1000);
    sms.respond = (_r, n) =>
      n === 1
        ? { status: 500, body: JSON.stringify({ code: 20500, message: "down" }) }
        : { status: 201, body: JSON.stringify({ sid: "SM2" }) };
    const a = triggered("SMS", { message: "retry me", addressList: ["4790000003"] });
    await outbox().accept([a]);
    await until(
      () => status(a.idempotencyKey).attempts === 1 && status(a.idempotencyKey).status === "pending",
      "failed once",
    );
    clock.advance(3000);
    await until(() => status(a.idempotencyKey).status === "delivered", "delivered");
    expect(sms.requests).toHaveLength(2);
  });
});

describe("EVENT", () => {
  it("stores the event, lists it by GET /events with filters and paging, and acknowledges it", async () => {
    const base = Date.now();
    const a = triggered(
      "EVENT",
      { classification: "ALARM", message: "hot ${thing.thingName}", acknowledgmentRequired: true },
      { at: base },
    );
    const b = triggered(
      "EVENT",
      { classification: "WARNING", message: "meter" },
      { thingName: "e1", domain: "east", at: base + 10 },
    );
    await outbox().accept([a, b]);
    await until(
      () => status(a.idempotencyKey).status === "delivered" && status(b.idempotencyKey).status === "delivered",
      "events",
    );

    const all = await json(await t.call("GET", "/events", { user: "alice" }));
    expect(all.events.map((e: Payload) => e.thingName)).toEqual(["e1", "t1"]);
    const ev = all.events[1];
    expect(ev).toMatchObject({
      ruleId: "rule-1",
      category: "cat.a",
      thingName: "t1",
      thingType: "10",
      domain: "acme",
      classification: "ALARM",
      message: "hot t1",
      acknowledgmentRequired: true,
      acknowledged: false,
      time: new Date(base).toISOString(),
    });

    const east = await json(await t.call("GET", "/events", { user: "eastie" }));
    expect(east.events.map((e: Payload) => e.thingName)).toEqual(["e1"]);
    const q = async (query: string) =>
      (await json(await t.call("GET", `/events?${query}`, { user: "alice" }))).events.map((e: Payload) => e.thingName);
    expect(await q("thingName=t1")).toEqual(["t1"]);
    expect(await q("classification=WARNING")).toEqual(["e1"]);
    expect(await q("category=cat.a")).toEqual(["e1", "t1"]);
    expect(await q(`from=${base + 5}`)).toEqual(["e1"]);
    expect(await q(`to=${encodeURIComponent(new Date(base + 5).toISOString())}`)).toEqual(["t1"]);
    const page = await json(await t.call("GET", "/events?size=1", { user: "alice" }));
    expect(page.pageInfo).toMatchObject({ size: 1, itemCount: 1, hasNext: true });
    const next = await json(
      await t.call("GET", `/events?size=1&marker=${page.pageInfo.nextMarker}`, { user: "alice" }),
    );
    expect(next.events.map((e: Payload) => e.thingName)).toEqual(["t1"]);
    expect(next.pageInfo.hasNext).toBe(false);
    expect((await t.call("GET", "/events?classification=PANIC", { user: "alice" })).status).toBe(400);

    expect((await t.call("POST", `/events/${ev.id}/ack`, { user: "reader" })).status).toBe(403);
    // Outside its Events.READ domains the event answers as a missing one (no enumeration by id).
    expect((await t.call("POST", `/events/${ev.id}/ack`, { user: "eastie" })).status).toBe(404);
    const acked = await json(await t.call("POST", `/events/${ev.id}/ack`, { user: "alice" }));
    expect(acked).toMatchObject({ id: ev.id, acknowledged: true, acknowledgedBy: "alice" });
    expect(await q("acknowledged=true")).toEqual(["t1"]);
    expect(await q("acknowledged=false")).toEqual(["e1"]);
    expect((await t.call("POST", "/events/424242/ack", { user: "alice" })).status).toBe(404);
  });

  it("a redelivered EVENT is stored once", async () => {
    const a = triggered("EVENT", { classification: "INTERNAL", message: "once" });
    const events = t.dms.services.events;
    const first = await events.insert({
      idempotencyKey: a.idempotencyKey,
      ruleId: "r",
      thingName: "t1",
      thingType: "10",
      domain: "acme",
      classification: "INTERNAL",
      message: "once",
      acknowledgmentRequired: false,
      time: 1,
    });
    await outbox().accept([a]);
    await until(() => status(a.idempotencyKey).status === "delivered", "delivered");
    const list = await json(await t.call("GET", "/events?classification=INTERNAL", { user: "alice" }));
    expect(list.events.map((e: Payload) => e.id)).toEqual([first.event.id]);
  });
});

describe("SET_RESOURCE", () => {
  it("feeds the change back into the engine as an observation of the thing", async () => {
    const fed: Observation[] = [];
    // An outbox made from its parts, with an ingest that keeps what it is fed in place of an engine.
    const db = openDatabase({ dataDir: ":memory:", migrations });
    const own = standaloneOutbox(db, {
      ingest: async (observations) => {
        fed.push(...observations);
      },
    });
    await own.start();
    const before = Date.now();
    try {
      const a = triggered("SET_RESOURCE", { resource: "alarm", value: "${observation.temp}" });
      const payloadNested = triggered("SET_RESOURCE", { resource: "door.locked", value: true });
      payloadNested.payload.observation.nested = [
        { type: "door", id: "front", state: { open: 1 } },
        { type: "door", id: "back", state: { open: 0 } },
        { type: "window", id: "w", state: {} },
      ];
      await own.accept([a]);
      await until(() => fed.length === 1, "first observation");
      await own.accept([payloadNested]);
      await until(() => fed.length === 2, "second observation");
      expect(fed[0]).toEqual({ thingName: "t1", timestamp: fed[0]!.timestamp, state: { alarm: 35 } });
      // Stamped when delivered (the outbox's clock), not with the triggering observation's time.
      expect(fed[0]!.timestamp).toBeGreaterThanOrEqual(before);
      // Without an id it stands for every door of the thing (the engine's state merge applies it to all).
      expect(fed[1]!.nested).toEqual([{ type: "door", state: { locked: true } }]);
    } finally {
      await own.stop();
      db.close();
    }
  });

  it("without an engine in the process the action is retried, not lost", async () => {
    const a = triggered("SET_RESOURCE", { resource: "alarm", value: 1 });
    await outbox().accept([a]);
    await until(() => status(a.idempotencyKey).attempts === 1, "a failed attempt");
    expect(status(a.idempotencyKey)).toMatchObject({ status: "pending" });
    expect(status(a.idempotencyKey).last_error).toContain("no rule engine");
  });
});
