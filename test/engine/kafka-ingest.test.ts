import { randomUUID } from "node:crypto";
import { Kafka, logLevel, type Consumer, type KafkaMessage, type Producer } from "kafkajs";
import mqtt from "mqtt";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Rule } from "../../src/rules/index.js";
import { startTestDms, type TestDms } from "../support/dms.js";
import { createTopic, kafkaEnv, startKafka } from "../support/kafka.js";
import { until } from "../support/wait.js";
import { triggered } from "../actions/support.js";
import { testRule } from "./support.js";

let brokers: string;
let kafka: Kafka;
let producer: Producer;
const consumers: Consumer[] = [];

beforeAll(async () => {
  brokers = await startKafka();
  kafka = new Kafka({ clientId: "ingest-test", brokers: brokers.split(","), logLevel: logLevel.NOTHING });
  producer = kafka.producer();
  await producer.connect();
});
afterAll(async () => {
  for (const c of consumers) await c.disconnect();
  await producer?.disconnect();
});

/** Everything on `topic` from the beginning, read by a group of its own. */
async function readTopic(topic: string): Promise<KafkaMessage[]> {
  const seen: KafkaMessage[] = [];
  const consumer = kafka.consumer({ groupId: `raw-${topic}` });
  consumers.push(consumer);
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({ eachMessage: async ({ message }) => void seen.push(message) });
  return seen;
}

const topicEnv = (topic: string) => ({ ...kafkaEnv(brokers, topic), KAFKA_EVENTS_TOPIC: `${topic}-events` });

const rule = (id: string, expression: Rule["expression"], actions: Rule["actions"]): Rule =>
  testRule(id, expression, { actions });

describe("SET_RESOURCE with Kafka", () => {
  const topic = `ingest-set-${randomUUID()}`;
  let actions: TestDms;
  let engine: TestDms;

  beforeAll(async () => {
    await createTopic(brokers, topic, 3);
    // The outbox runs where no engine does; the engine in a process of its own hands it what triggers.
    actions = await startTestDms({ env: { DMS_ROLES: "api,actions", ...topicEnv(topic) } });
    engine = await startTestDms({
      env: { DMS_ROLES: "api,engine", ...topicEnv(topic) },
      start: { actionSink: actions.dms.services.actions },
    });
    const bus = engine.dms.services.bus;
    bus.emit("rule.changed", {
      id: "set-alarm",
      rule: rule(
        "set-alarm",
        [{ operator: "gt", resource: "temp", value: 30 }],
        [{ type: "SET_RESOURCE", config: { resource: "alarm", value: "${observation.temp}" } }],
      ),
    });
    bus.emit("rule.changed", {
      id: "on-alarm",
      rule: rule(
        "on-alarm",
        [{ operator: "gt", resource: "alarm", value: 0 }],
        [{ type: "EVENT", config: { classification: "ALARM", message: "alarm" } }],
      ),
    });
  });
  afterAll(async () => {
    await engine?.close();
    await actions?.close();
  });

  it("goes to the observations topic keyed by the thing, and the partition's engine evaluates it", async () => {
    expect(actions.dms.services.engine).toBeUndefined();
    const raw = await readTopic(topic);
    const timestamp = Date.now();
    await producer.send({
      topic,
      messages: [{ key: "t1", value: JSON.stringify({ thingName: "t1", timestamp, state: { temp: 35 } }) }],
    });

    // The actions process produced the change: keyed by t1, the observation as JSON.
    await until(() => raw.length === 2, 20_000, "the SET_RESOURCE observation on the topic");
    const produced = raw[1]!;
    expect(produced.key?.toString()).toBe("t1");
    expect(JSON.parse(produced.value!.toString())).toMatchObject({ thingName: "t1", state: { alarm: 35 } });

    // The engine process read it from the topic: its state has the alarm, and on-alarm triggered on it.
    const outbox = actions.dms.services.db!.prepare<[], { payload: string; status: string }>(
      "SELECT payload, status FROM action_outbox WHERE rule_id = 'on-alarm'",
    );
    await until(() => outbox.all().length === 1, 20_000, "on-alarm triggered by the fed-back observation");
    const payload = JSON.parse(outbox.all()[0]!.payload);
    expect(payload.observation.id).toMatch(new RegExp(`^kafka:${topic}:\\d+:${produced.offset}$`));
    expect(payload.thing.state).toMatchObject({ temp: 35, alarm: 35 });
    await until(() => outbox.all()[0]!.status === "delivered", 20_000, "the EVENT delivered");
    // The set-alarm delivery succeeded once the broker took the observation.
    const setAlarm = actions.dms.services
      .db!.prepare<[], { status: string }>("SELECT status FROM action_outbox WHERE rule_id = 'set-alarm'")
      .all();
    expect(setAlarm).toEqual([{ status: "delivered" }]);
  });
});

describe("device observations over MQTT with Kafka", () => {
  const topic = `ingest-mqtt-${randomUUID()}`;
  let bridge: TestDms;

  beforeAll(async () => {
    await createTopic(brokers, topic, 3);
    // No engine here: the bridge's process produces, whoever owns the partition evaluates.
    bridge = await startTestDms({ env: { DMS_ROLES: "api,mqtt", DMS_MQTT_PORT: "0", ...topicEnv(topic) } });
  });
  afterAll(() => bridge?.close());

  it("are decoded once by the bridge: its observations go to the topic keyed by it, the rest are its dead letters", async () => {
    const raw = await readTopic(topic);
    const device = await mqtt.connectAsync(`mqtt://127.0.0.1:${bridge.dms.services.deviceBridge!.port!}`, {
      clientId: "t1",
      username: "t1",
      password: "dev-pw-0123456789abcdef",
      reconnectPeriod: 0,
    });
    const timestamp = Date.now();
    try {
      await device.publishAsync(
        "things/t1/observations",
        JSON.stringify([
          // Another thing of its domain, a thing of another domain as a JSON string, items that are no objects:
          // a device speaks only for itself, and nothing it sends is parsed a second time downstream.
          { thingName: "t2", timestamp, state: { temp: 21.5 } },
          { timestamp: timestamp + 1, state: { temp: 22 } },
          JSON.stringify({ thingName: "e1", timestamp, state: { power: 1 } }),
          null,
          7,
        ]),
        { qos: 1 },
      );
      await device.publishAsync("things/t1/observations", "not json", { qos: 1 });
      await device.publishAsync("things/t1/observations", JSON.stringify({ timestamp: timestamp + 2, state: {} }), {
        qos: 1,
      });
    } finally {
      await device.endAsync();
    }
    await until(() => raw.length === 2, 20_000, "two messages on the topic");
    await new Promise((r) => setTimeout(r, 500));
    expect(raw).toHaveLength(2);
    expect(raw.map((m) => m.key?.toString())).toEqual(["t1", "t1"]);
    expect(JSON.parse(raw[0]!.value!.toString())).toEqual({
      thingName: "t1",
      timestamp: timestamp + 1,
      state: { temp: 22 },
    });
    expect(JSON.parse(raw[1]!.value!.toString())).toEqual({ thingName: "t1", timestamp: timestamp + 2, state: {} });

    const letters = bridge.dms.services
      .db!.prepare<[], { source: string; thing_name: string; domain: string; reason: string }>(
        "SELECT source, thing_name, domain, reason FROM engine_dead_letters ORDER BY id",
      )
      .all();
    expect(letters).toEqual(
      ["foreign-thing", "invalid-observation", "invalid-observation", "invalid-observation", "not-json"].map(
        (reason) => ({ source: "mqtt", thing_name: "t1", domain: "acme", reason }),
      ),
    );
  });
});

describe("SET_RESOURCE when the broker cannot be reached", () => {
  let actions: TestDms;
  beforeAll(async () => {
    // Nothing listens on port 1: connecting fails, and the produce rejects.
    actions = await startTestDms({
      env: { DMS_ROLES: "api,actions", ...topicEnv(`ingest-down-${randomUUID()}`), KAFKA_BROKERS: "127.0.0.1:1" },
    });
  });
  afterAll(() => actions?.close());

  it("fails the delivery so the outbox retries it", async () => {
    await actions.dms.services.actions.accept([triggered("SET_RESOURCE", { resource: "alarm", value: 1 })]);
    const row = actions.dms.services.db!.prepare<[], { status: string; attempts: number; last_error: string | null }>(
      "SELECT status, attempts, last_error FROM action_outbox WHERE rule_id = 'rule-1'",
    );
    await until(() => (row.get()?.attempts ?? 0) >= 1, 60_000, "a failed attempt");
    expect(row.get()).toMatchObject({ status: "pending" });
    expect(row.get()!.last_error).toBeTruthy();
  }, 70_000);
});
