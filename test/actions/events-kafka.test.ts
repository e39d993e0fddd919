import { randomUUID } from "node:crypto";
import { Kafka, logLevel } from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTopic, startKafka } from "../support/kafka.js";
import { startTestDms, type TestDms } from "../support/dms.js";
import { triggered, until } from "./support.js";

let brokers = "";
let t: TestDms;
const topic = `dms-events-test-${randomUUID()}`;

beforeAll(async () => {
  brokers = await startKafka();
  await createTopic(brokers, topic, 1);
  // No engine role: with KAFKA_BROKERS set it would consume the observations topic, which this test does not need.
  t = await startTestDms({ env: { DMS_ROLES: "api,actions", KAFKA_BROKERS: brokers, KAFKA_EVENTS_TOPIC: topic } });
}, 600_000);
afterAll(async () => {
  await t?.close();
});

describe("EVENT with Kafka on", () => {
  it("stores the event and produces it to KAFKA_EVENTS_TOPIC keyed by thingName", async () => {
    const action = triggered("EVENT", { classification: "NOTIFICATION", message: "door ${thing.thingName}" });
    await t.dms.services.actions.accept([action]);

    const kafka = new Kafka({ clientId: "dms-events-test", brokers: brokers.split(","), logLevel: logLevel.WARN });
    const consumer = kafka.consumer({ groupId: `dms-events-test-${randomUUID()}` });
    const got: { key: string; value: Record<string, unknown> }[] = [];
    await consumer.connect();
    try {
      await consumer.subscribe({ topic, fromBeginning: true });
      await consumer.run({
        eachMessage: async ({ message }) => {
          got.push({ key: String(message.key), value: JSON.parse(String(message.value)) as Record<string, unknown> });
        },
      });
      await until(() => got.length === 1, "the event on the topic", 60_000);
    } finally {
      await consumer.disconnect();
    }
    expect(got[0]!.key).toBe("t1");
    expect(got[0]!.value).toMatchObject({
      thingName: "t1",
      message: "door t1",
      classification: "NOTIFICATION",
      ruleId: "rule-1",
    });
    const stored = await t.dms.services.events.get(String(got[0]!.value.id));
    expect(stored?.message).toBe("door t1");
  }, 120_000);
});
