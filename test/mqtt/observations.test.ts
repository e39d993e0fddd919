import mqtt from "mqtt";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDms, type TestDms } from "../support/dms.js";
import { json } from "../support/http.js";

let t: TestDms;
beforeAll(async () => {
  t = await startTestDms({ env: { DMS_ROLES: "api,engine,mqtt", DMS_MQTT_PORT: "0" } });
});
afterAll(() => t.close());

async function until<T>(probe: () => T | undefined | Promise<T | undefined>, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error("condition not reached in time");
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("device observations over MQTT", () => {
  it("enter the rule engine: stored with thingType and domain, the topic naming the thing", async () => {
    const port = t.dms.services.deviceBridge!.port!;
    const device = await mqtt.connectAsync(`mqtt://127.0.0.1:${port}`, {
      clientId: "t1",
      username: "t1",
      password: "dev-pw",
      reconnectPeriod: 0,
    });
    const timestamp = Date.now();
    // The payload names another thing: a device speaks only for itself, so t1 is stored.
    await device.publishAsync(
      "things/t1/observations",
      JSON.stringify({ thingName: "t2", timestamp, state: { temp: 21.5 } }),
      { qos: 1 },
    );
    await device.publishAsync("things/t1/observations", "not json", { qos: 1 });
    await device.endAsync();

    const stored = await until(() => {
      const row = t.dms.services.db
        .prepare<[number], { thing_name: string; thing_type: string; domain: string; doc: string }>(
          "SELECT thing_name, thing_type, domain, doc FROM observations WHERE ts = ?",
        )
        .get(timestamp);
      return row;
    });
    expect(stored.thing_name).toBe("t1");
    expect(stored.thing_type).toBe("10");
    expect(stored.domain).toBe("acme");
    expect(JSON.parse(stored.doc).state).toEqual({ temp: 21.5 });

    // The bytes that were not JSON are a dead letter from the mqtt source, with a reason.
    const letter = await until(async () => {
      const res = await t.call("GET", "/observations/dead-letters", { user: "admin" });
      const text = JSON.stringify(await json(res));
      return text.includes("mqtt") ? text : undefined;
    });
    expect(letter).toMatch(/json/i);
  });
});
