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
    // A device speaks only for itself: an observation naming another thing (of its domain or, as a JSON
    // string the engine once parsed again, of another) is refused; one naming none is the device's.
    await device.publishAsync(
      "things/t1/observations",
      JSON.stringify([
        { thingName: "t2", timestamp: timestamp - 1, state: { temp: 99 } },
        JSON.stringify({ thingName: "e1", timestamp: timestamp - 1, state: { power: 99 } }),
        null,
        { timestamp, state: { temp: 21.5 } },
      ]),
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

    // What was refused is a dead letter from the mqtt source of the device, with a reason, readable in its domain.
    const letters = await until(async () => {
      const res = await t.call("GET", "/observations/dead-letters", { user: "alice" });
      const body = (await json(res)) as { deadLetters: { source: string; thingName: string; reason: string }[] };
      return body.deadLetters.length === 4 ? body.deadLetters : undefined;
    });
    expect(letters.map((d) => [d.source, d.thingName, d.reason])).toEqual([
      ["mqtt", "t1", "not-json"],
      ["mqtt", "t1", "invalid-observation"],
      ["mqtt", "t1", "invalid-observation"],
      ["mqtt", "t1", "foreign-thing"],
    ]);
    const others = t.dms.services.db
      .prepare<[number], { n: number }>("SELECT count(*) AS n FROM observations WHERE ts = ?")
      .get(timestamp - 1);
    expect(others!.n).toBe(0);
    expect(t.dms.services.engine!.engine.thingState("e1")?.state.power).toBeUndefined();
  });
});
