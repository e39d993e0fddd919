import { join } from "node:path";
import Database from "better-sqlite3";
import mqtt from "mqtt";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ActionSink } from "../../src/actions/index.js";
import { OBSERVATIONS_FILE } from "../../src/observations/index.js";
import { startTestDms, type TestDms } from "../support/dms.js";
import { storedObservations } from "../support/observations.js";
import { json } from "../support/http.js";
import { hot } from "../engine/support.js";

let t: TestDms;
/** Where the engine hands what triggers: the outbox, unless a test slows the hand-over down. */
let sinkDelayMs: number | undefined;
const sink: ActionSink = {
  accept: (actions) =>
    sinkDelayMs === undefined
      ? t.dms.services.actions.accept(actions)
      : new Promise((resolve) => setTimeout(resolve, sinkDelayMs)),
};
beforeAll(async () => {
  t = await startTestDms({ env: { DMS_ROLES: "api,engine,mqtt", DMS_MQTT_PORT: "0" }, start: { actionSink: sink } });
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
      password: "dev-pw-0123456789abcdef",
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

    const stored = await until(() => storedObservations(t, timestamp, timestamp)[0]?.document);
    expect(stored.thingName).toBe("t1");
    expect(stored.thingType).toBe("10");
    expect(stored.domain).toBe("acme");
    expect(stored.state).toEqual({ temp: 21.5 });

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
    expect(storedObservations(t, timestamp - 1, timestamp - 1)).toHaveLength(0);
    expect(t.dms.services.engine!.engine.thingState("e1")?.state.power).toBeUndefined();
  });

  it("still reach the device itself when it subscribed to them, as well as the engine", async () => {
    const port = t.dms.services.deviceBridge!.port!;
    // Persistent sessions: the second connection's subscriptions are restored by aedes, not subscribed again.
    const options = {
      clientId: "t2",
      username: "t2",
      password: "dev-pw-0123456789abcdef",
      reconnectPeriod: 0,
      clean: false,
    };
    const first = await mqtt.connectAsync(`mqtt://127.0.0.1:${port}`, options);
    await first.subscribeAsync("things/t2/+", { qos: 1 });
    await first.endAsync();
    const device = await mqtt.connectAsync(`mqtt://127.0.0.1:${port}`, options);
    const heard: string[] = [];
    device.on("message", (topic, payload) => heard.push(`${topic} ${payload.toString()}`));
    const timestamp = Date.now() + 3_000_000;
    const payload = JSON.stringify({ timestamp, state: { temp: 5 } });
    await device.publishAsync("things/t2/observations", payload, { qos: 1 });
    await until(() => (heard.length > 0 ? true : undefined));
    expect(heard).toEqual([`things/t2/observations ${payload}`]);
    expect(storedObservations(t, timestamp, timestamp)).toHaveLength(1);
    await device.unsubscribeAsync("things/t2/+");
    await device.endAsync();
  });
});

describe("QoS 1 device observations (group commit)", () => {
  const connect = (thingName: string, reconnectPeriod = 0) =>
    mqtt.connectAsync(`mqtt://127.0.0.1:${t.dms.services.deviceBridge!.port!}`, {
      clientId: thingName,
      username: thingName,
      password: "dev-pw-0123456789abcdef",
      reconnectPeriod,
    });
  const storedAt = (timestamp: number): number => storedObservations(t, timestamp, timestamp).length;

  it("are acknowledged only once stored: every PUBACK finds its observation in the store", async () => {
    // Each batch triggers the rule and the sink takes its time, as an outbox on a busy disk would:
    // a PUBACK sent before the commit would reach the device well before the store has the row.
    t.dms.services.bus.emit("rule.changed", { id: hot.id, rule: hot });
    sinkDelayMs = 50;
    const devices = await Promise.all(["t1", "t2", "e1"].map((name) => connect(name)));
    const base = Date.now() + 1_000_000;
    const missingAtAck: number[] = [];
    // Many in flight per device at once, so the bridge commits them in groups.
    await Promise.all(
      devices.flatMap((device, d) =>
        Array.from({ length: 60 }, async (_, i) => {
          const timestamp = base + d * 1000 + i;
          const state = d === 2 ? { power: i } : { temp: 31 + i };
          await device.publishAsync(
            `things/${device.options.clientId}/observations`,
            JSON.stringify({ timestamp, state }),
            {
              qos: 1,
            },
          );
          // Checked in the PUBACK's own turn: nothing could have stored it after the acknowledgement.
          if (storedAt(timestamp) !== 1) missingAtAck.push(timestamp);
        }),
      ),
    );
    await Promise.all(devices.map((d) => d.endAsync()));
    expect(missingAtAck).toEqual([]);
    expect(storedObservations(t, base, base + 3000)).toHaveLength(180);
    t.dms.services.bus.emit("rule.changed", { id: hot.id, rule: null });
    sinkDelayMs = undefined;
  });

  it("are not acknowledged when the store fails, and stored once when the device publishes them again", async () => {
    const device = await connect("t2", 100);
    const timestamp = Date.now() + 2_000_000;
    // Another connection holds the observation file's write lock past the writer's busy timeout (5 s).
    const blocker = new Database(join(t.dataDir, OBSERVATIONS_FILE));
    blocker.exec("BEGIN EXCLUSIVE");
    let acked = false;
    const publish = device
      .publishAsync("things/t2/observations", JSON.stringify({ timestamp, state: { temp: 7 } }), { qos: 1 })
      .then(() => (acked = true));
    // The failed commit drops the connection without a PUBACK.
    await until(() => (device.connected ? undefined : true));
    expect(acked).toBe(false);
    blocker.exec("COMMIT");
    blocker.close();
    // mqtt.js sends the unacknowledged publish again when it reconnects.
    await publish;
    expect(storedAt(timestamp)).toBe(1);
    await device.endAsync();
  });
});

describe("/metrics", () => {
  it("shows ingest per source, the outbox backlog, dead letters, MQTT connections and provisioning", async () => {
    const text = await (await fetch(`${t.url}/metrics`)).text();
    // The earlier tests' device observations, handed to the engine by the MQTT source.
    expect(text).toMatch(/dms_ingest_observations_total\{source="mqtt"\} [1-9]/);
    expect(text).toMatch(/dms_actions_outbox_depth \d+/);
    expect(text).toMatch(/dms_actions_outbox_oldest_pending_seconds \d/);
    expect(text).toMatch(/dms_actions_dead_letters \d+/);
    expect(text).toMatch(/dms_engine_dead_letters [1-9]/);
    expect(text).toMatch(/dms_mqtt_connected_devices \d+/);
    // BASE_PROVISION's 3 things, all applied.
    expect(text).toContain('dms_provisioning_things{state="total"} 3');
    expect(text).toContain('dms_provisioning_things{state="applied"} 3');
  });
});
