import { describe, expect, it } from "vitest";
import type { Provision } from "../../src/provision/index.js";
import { generateDeviceSecret } from "../../src/things/index.js";
import { API_KEY, BASE_PROVISION, startTestDms } from "../support/dms.js";
import { json } from "../support/http.js";

/** BASE_PROVISION plus `count` things of type 10 in acme: enough to take seconds to apply. */
function largeFleet(count: number): Provision {
  return {
    ...BASE_PROVISION,
    things: [
      ...BASE_PROVISION.things!,
      ...Array.from({ length: count }, (_, i) => ({
        thingName: `f${i}`,
        thingType: "10",
        domain: "acme",
        serial: `SN-F${i}`,
        secret: generateDeviceSecret(),
      })),
    ],
  };
}

const COUNT = 20_000;
const LAST_THING = `f${COUNT - 1}`;

const ruleNaming = (thingName: string) => ({
  name: "on-last",
  enabled: true,
  filter: { domain: "acme", thingType: "10", thingNames: [thingName] },
  expression: [{ operator: "gt", resource: "temp", value: 1 }],
  threshold: { count: 1, interval: 0 },
  actions: [{ type: "EVENT", config: { classification: "ALARM", message: "m" } }],
});

/** Operations of every kind, with and without credentials; each must wait for the service to start. */
const GATED: { method: string; path: string; body?: unknown; key?: boolean }[] = [
  { method: "POST", path: "/auth/login", body: { userName: "admin", password: "admin-pw" }, key: true },
  { method: "POST", path: "/rules", body: ruleNaming(LAST_THING), key: true },
  { method: "GET", path: `/things/${LAST_THING}`, key: true },
  { method: "POST", path: "/observations", body: [{ thingName: "t1", timestamp: 1, state: { temp: 3 } }], key: true },
  { method: "GET", path: "/manifest" },
  { method: "GET", path: "/prod/rules" },
  { method: "GET", path: "/no/such/operation" },
];

/** Probes, metrics and the API description answer while starting, under a stage too. */
const OPEN = ["/healthz", "/prod/healthz", "/metrics", "/openapi.json", "/docs", "/docs/assets/swagger-ui.css"];

interface Round {
  gated: { path: string; status: number; retryAfter: string | null; body: unknown }[];
  open: number[];
  /** /readyz asked after the round's operations had answered. */
  readyAfter: number;
}

async function round(url: string): Promise<Round> {
  const [gated, open] = await Promise.all([
    Promise.all(
      GATED.map(async ({ method, path, body, key }) => {
        const headers: Record<string, string> = { authorization: "Bearer not-a-token" };
        if (key) headers["x-api-key"] = API_KEY;
        if (body !== undefined) headers["content-type"] = "application/json";
        const res = await fetch(`${url}${path}`, {
          method,
          headers,
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        return { path, status: res.status, retryAfter: res.headers.get("retry-after"), body: await json(res) };
      }),
    ),
    Promise.all(OPEN.map(async (path) => (await fetch(`${url}${path}`)).status)),
  ]);
  return { gated, open, readyAfter: (await fetch(`${url}/readyz`)).status };
}

describe("requests before the service is ready", () => {
  it("answer 503 SERVICE_STARTING with Retry-After while a large file is applied; the probes answer; then all serve", async () => {
    const rounds: Round[] = [];
    let started = false;
    let polling: Promise<void> = Promise.resolve();
    const t = await startTestDms({
      provision: largeFleet(COUNT),
      start: {
        onListening: (url) => {
          polling = (async () => {
            while (!started) rounds.push(await round(url));
          })();
        },
      },
    });
    started = true;
    await polling;
    try {
      // Rounds whose operations all answered before /readyz said ready: the window being tested.
      const starting = rounds.filter((r) => r.readyAfter === 503);
      expect(starting.length).toBeGreaterThan(2);
      for (const r of starting) {
        expect(r.open.every((s) => s === 200)).toBe(true);
        for (const answer of r.gated) {
          expect(answer, answer.path).toMatchObject({
            status: 503,
            body: { messageKey: "SERVICE_STARTING", message: expect.stringContaining("starting") as unknown },
          });
          expect(Number(answer.retryAfter), answer.path).toBeGreaterThan(0);
        }
      }

      // Once ready, the same set-up succeeds: the last thing of the file exists for a rule naming it.
      expect((await t.call("GET", "/readyz")).status).toBe(200);
      const created = await t.call("POST", "/rules", { user: "alice", body: ruleNaming(LAST_THING) });
      expect(created.status).toBe(200);
      const posted = await t.call("POST", "/observations", {
        user: "admin",
        body: [{ thingName: LAST_THING, timestamp: Date.now(), state: { temp: 3 } }],
      });
      // Without the engine role the operation says so; it no longer says the service is starting.
      expect(await json(posted)).not.toMatchObject({ messageKey: "SERVICE_STARTING" });
      expect((await t.call("GET", "/no/such/operation", { user: "admin" })).status).toBe(404);
    } finally {
      await t.close();
    }
  }, 300_000);
});
