import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDms } from "../support/dms.js";
import { json } from "../support/http.js";
import { ruleBody } from "../rules/fixtures.js";
import { Receiver, triggered, until } from "./support.js";

let hook: Receiver;
const dataDir = mkdtempSync(join(tmpdir(), "dms-restart-"));

beforeAll(async () => {
  hook = await new Receiver().start();
});
afterAll(async () => {
  await hook.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe("the outbox across a restart", () => {
  it("delivers once what a stopped process left undelivered, and drops a replay of what it holds", async () => {
    const env = { DMS_WEBHOOK_ALLOW_PRIVATE: "true" };
    // First process: engine without the actions role, so triggered actions stay in the outbox.
    const first = await startTestDms({ dataDir, env: { ...env, DMS_ROLES: "api,engine" } });
    const rule = await json(
      await first.call("POST", "/rules", {
        user: "alice",
        body: ruleBody({
          actions: [{ type: "WEBHOOK", config: { uri: `${hook.url}/r`, body: "${thing.thingName}" } }],
        }),
      }),
    );
    const posted = await first.call("POST", "/observations", {
      user: "admin",
      body: [
        { thingName: "t1", timestamp: Date.now(), state: { temp: 40 } },
        { thingName: "t2", timestamp: Date.now(), state: { temp: 41 } },
      ],
    });
    expect(await json(posted)).toMatchObject({ triggered: 2 });
    // A third action was being delivered when the process died.
    const inFlight = triggered("WEBHOOK", { uri: `${hook.url}/r`, body: "in flight" });
    await first.dms.services.actions.accept([inFlight]);
    first.dms.services
      .db!.prepare("UPDATE action_outbox SET status = 'delivering' WHERE idempotency_key = ?")
      .run(inFlight.idempotencyKey);
    const keys = first.dms.services.db!.prepare("SELECT idempotency_key AS k FROM action_outbox").all() as {
      k: string;
    }[];
    expect(keys).toHaveLength(3);
    await first.close();
    expect(hook.requests).toHaveLength(0);

    const second = await startTestDms({ dataDir, env: { ...env, DMS_ROLES: "api,engine,actions" } });
    try {
      await until(() => hook.requests.length === 3, "three deliveries");
      await until(async () => (await second.dms.services.actions.pendingCount()) === 0, "an empty outbox");
      expect(hook.requests.map((r) => r.body).sort()).toEqual(["in flight", "t1", "t2"]);
      expect(new Set(hook.requests.map((r) => r.headers["idempotency-key"]))).toEqual(new Set(keys.map((k) => k.k)));
      // A replay of the same triggered actions (same keys) sends nothing again.
      await second.dms.services.actions.accept([inFlight]);
      await new Promise((r) => setTimeout(r, 100));
      expect(hook.requests).toHaveLength(3);
      expect(rule.id).toMatch(/^dev\d{8}$/);
    } finally {
      await second.close();
    }
  });
});
