import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startTestDms, type TestDms } from "../support/dms.js";
import { json, type Payload } from "../support/http.js";
import { ManualClock, Receiver, triggered, until } from "./support.js";

const clock = new ManualClock();
let t: TestDms;
let hook: Receiver;

beforeAll(async () => {
  hook = await new Receiver(clock.now).start();
  t = await startTestDms({
    env: { DMS_ROLES: "api,actions", DMS_WEBHOOK_ALLOW_PRIVATE: "true" },
    // Tokens keep real time (hono/jwt checks iat against it); the outbox runs on the fake clock.
    start: { timers: clock, clock: Date.now },
  });
});
afterAll(async () => {
  await t.close();
  await hook.close();
});
afterEach(() => {
  hook.requests.length = 0;
  hook.respond = () => ({ status: 200 });
});

const outbox = () => t.dms.services.actions;
const delivery = (key: string): Payload =>
  t.dms.services.db!.prepare("SELECT * FROM action_outbox WHERE idempotency_key = ?").get(key);
/** Waits until the outbox has settled `attempts` attempts of the delivery (so a retry is scheduled). */
const settled = (key: string, attempts: number) =>
  until(() => {
    const d = delivery(key);
    return d !== undefined && d.attempts === attempts && d.status !== "delivering";
  }, `${attempts} settled attempts of ${key}`);

describe("WEBHOOK", () => {
  it("retries a failing receiver at interval * backOffRate^(n-1) and stops at the first 2xx", async () => {
    hook.respond = (_r, n) => ({ status: n <= 2 ? 503 : 200 });
    const action = triggered("WEBHOOK", {
      uri: `${hook.url}/hook/\${thing.thingName}`,
      body: '{"t": ${observation.temp}, "name": "${thing.thingName}"}',
      retry: { interval: 3, maxAttempts: 3, backOffRate: 2 },
    });
    await outbox().accept([action]);
    await settled(action.idempotencyKey, 1);
    clock.advance(2999);
    await new Promise((r) => setTimeout(r, 50));
    expect(hook.requests).toHaveLength(1);
    clock.advance(1);
    await settled(action.idempotencyKey, 2);
    clock.advance(6000);
    await settled(action.idempotencyKey, 3);

    expect(hook.requests).toHaveLength(3);
    const times = hook.requests.map((r) => r.at);
    expect([times[1]! - times[0]!, times[2]! - times[1]!]).toEqual([3000, 6000]);
    expect(delivery(action.idempotencyKey).status).toBe("delivered");
    for (const r of hook.requests) {
      expect(r.method).toBe("POST");
      expect(r.url).toBe("/hook/t1");
      expect(r.headers["idempotency-key"]).toBe(action.idempotencyKey);
      expect(JSON.parse(r.body)).toEqual({ t: 35, name: "t1" });
      expect(r.headers["content-type"]).toBe("application/json");
    }
  });

  it("uses the defaults 3, 3, 2: waits 3, 6, 12 s, then keeps a dead letter that the API lists and retries", async () => {
    hook.respond = () => ({ status: 500 });
    const action = triggered("WEBHOOK", { uri: `${hook.url}/dead`, body: "x" });
    await outbox().accept([action]);
    for (const [n, wait] of [
      [1, 3000],
      [2, 6000],
      [3, 12000],
    ] as const) {
      await settled(action.idempotencyKey, n);
      clock.advance(wait);
    }
    await settled(action.idempotencyKey, 4);
    const times = hook.requests.map((r) => r.at);
    expect(times.slice(1).map((v, i) => v - times[i]!)).toEqual([3000, 6000, 12000]);
    expect(delivery(action.idempotencyKey).status).toBe("dead");

    const list = await json(await t.call("GET", "/actions/dead-letters", { user: "alice" }));
    const dead = list.deadLetters.find((d: Payload) => d.idempotencyKey === action.idempotencyKey);
    expect(dead).toMatchObject({ ruleId: "rule-1", thingName: "t1", type: "WEBHOOK", status: "dead", attempts: 4 });
    expect(dead.lastError).toContain("HTTP 500");
    // Another domain's user does not see it; a Read user may not retry it.
    const otherRes = await t.call("GET", "/actions/dead-letters", { user: "eastie" });
    const other = await json(otherRes);
    expect(other.deadLetters.map((d: Payload) => d.id)).not.toContain(dead.id);
    expect((await t.call("POST", `/actions/dead-letters/${dead.id}/retry`, { user: "reader" })).status).toBe(403);

    hook.respond = () => ({ status: 204 });
    const retried = await t.call("POST", `/actions/dead-letters/${dead.id}/retry`, { user: "alice" });
    expect(retried.status).toBe(200);
    expect((await json(retried)).status).toBe("pending");
    await until(() => delivery(action.idempotencyKey).status === "delivered", "redelivery");
    expect(hook.requests).toHaveLength(5);
    const again = await t.call("POST", `/actions/dead-letters/${dead.id}/retry`, { user: "alice" });
    expect((await json(again)).messageKey).toBe("INVALID_ACTION");
    expect((await t.call("POST", "/actions/dead-letters/999999/retry", { user: "alice" })).status).toBe(404);
  });

  it("maxAttempts 0 means one attempt and no retry", async () => {
    hook.respond = () => ({ status: 400 });
    const action = triggered("WEBHOOK", {
      uri: hook.url,
      body: "x",
      retry: { interval: 1, maxAttempts: 0, backOffRate: 1 },
    });
    await outbox().accept([action]);
    await until(() => delivery(action.idempotencyKey)?.status === "dead", "dead letter");
    expect(hook.requests).toHaveLength(1);
  });

  it("includeAllEventData sends the whole payload; method, Authorization and additional headers are applied", async () => {
    const action = triggered("WEBHOOK", {
      uri: `${hook.url}/all`,
      method: "PUT",
      includeAllEventData: true,
      body: "ignored",
      authorizationHeader: "Bearer ${rule.id}",
      additionalHeaders: [{ header: "X-Thing", value: "${thing.thingName}" }],
    });
    await outbox().accept([action]);
    await until(() => hook.requests.length === 1, "delivery");
    const r = hook.requests[0]!;
    expect(r.method).toBe("PUT");
    expect(JSON.parse(r.body)).toEqual(action.payload);
    expect(r.headers.authorization).toBe("Bearer rule-1");
    expect(r.headers["x-thing"]).toBe("t1");
  });

  it("GET carries no body", async () => {
    const action = triggered("WEBHOOK", { uri: `${hook.url}/get?thing=\${thing.thingName}`, method: "GET", body: "x" });
    await outbox().accept([action]);
    await until(() => hook.requests.length === 1, "delivery");
    expect(hook.requests[0]).toMatchObject({ method: "GET", url: "/get?thing=t1", body: "" });
  });

  it("drops a triggered action whose idempotency key the outbox holds", async () => {
    const action = triggered("WEBHOOK", { uri: hook.url, body: "once" });
    await outbox().accept([action]);
    await until(() => delivery(action.idempotencyKey)?.status === "delivered", "delivery");
    await outbox().accept([action, action]);
    await new Promise((r) => setTimeout(r, 50));
    expect(hook.requests).toHaveLength(1);
  });

  it("an unknown ${} variable becomes an empty string", async () => {
    const action = triggered("WEBHOOK", { uri: hook.url, body: "[${thing.state.nothing}|${observation.temp}]" });
    await outbox().accept([action]);
    await until(() => hook.requests.length === 1, "delivery");
    expect(hook.requests[0]!.body).toBe("[|35]");
  });

  it("a network error is a failed attempt", async () => {
    const gone = await new Receiver().start();
    const url = gone.url;
    await gone.close();
    const action = triggered("WEBHOOK", {
      uri: url,
      body: "x",
      retry: { interval: 1, maxAttempts: 0, backOffRate: 1 },
    });
    await outbox().accept([action]);
    await until(() => delivery(action.idempotencyKey)?.status === "dead", "dead letter");
    expect(delivery(action.idempotencyKey).last_error).toMatch(/ECONNREFUSED/);
  });

  it("keeps delivered rows for replays for 7 days, then prunes them; dead letters stay", async () => {
    const action = triggered("WEBHOOK", { uri: hook.url, body: "kept" });
    await outbox().accept([action]);
    await until(() => delivery(action.idempotencyKey)?.status === "delivered", "delivery");
    expect(await outbox().prune()).toBe(0);
    clock.advance(7 * 24 * 3600_000 + 1);
    expect(await outbox().prune()).toBeGreaterThan(0);
    expect(delivery(action.idempotencyKey)).toBeUndefined();
    const dead = t.dms.services.db!.prepare("SELECT count(*) AS n FROM action_outbox WHERE status = 'dead'").get() as {
      n: number;
    };
    expect(dead.n).toBeGreaterThan(0);
  });
});
