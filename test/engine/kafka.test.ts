import { randomUUID } from "node:crypto";
import { Kafka, logLevel, type Producer } from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KafkaObservationSource, type RawObservation } from "../../src/engine/index.js";
import { createTopic, kafkaEnv, startKafka } from "../support/kafka.js";
import { startTestDms, type TestDms } from "../support/dms.js";
import { json } from "../support/http.js";
import { CollectingSink, hot } from "./support.js";
import { until } from "../support/wait.js";

let brokers: string;
let kafka: Kafka;
let producer: Producer;

beforeAll(async () => {
  brokers = await startKafka();
  kafka = new Kafka({ clientId: "engine-test", brokers: brokers.split(","), logLevel: logLevel.NOTHING });
  producer = kafka.producer();
  await producer.connect();
});
afterAll(async () => {
  await producer?.disconnect();
});

const observation = (thingName: string, state: Record<string, unknown>, ts = 1763000000000) =>
  JSON.stringify({ thingName, timestamp: ts, state });

describe("the Kafka source in a running dms", () => {
  let t: TestDms;
  const sink = new CollectingSink();
  const topic = `engine-test-${randomUUID()}`;

  beforeAll(async () => {
    await createTopic(brokers, topic, 2);
    t = await startTestDms({
      env: { DMS_ROLES: "api,engine", ...kafkaEnv(brokers, topic) },
      start: { actionSink: sink },
    });
    t.dms.services.bus.emit("rule.changed", { id: hot.id, rule: hot });
  });
  afterAll(() => t?.close());

  it("bad messages go to dead letters while the good ones around them are evaluated", async () => {
    await producer.send({
      topic,
      messages: [
        { key: "t1", value: observation("t1", { temp: 31 }), partition: 0 },
        { key: "t1", value: Buffer.from([0xc3, 0x28, 0xff]), partition: 0 },
        { key: "t1", value: '{"thingName":"t1"', partition: 0 },
        { key: "ghost", value: observation("ghost", { temp: 99 }), partition: 0 },
        { key: "t1", value: JSON.stringify({ thingName: "t1", state: { temp: 50 } }), partition: 0 },
        { key: "t1", value: observation("t1", { temp: "warm" }), partition: 0 },
        // JSON values that are not objects: an observation encoded as a JSON string is a string, not parsed again.
        { key: "t1", value: JSON.stringify(observation("t1", { temp: 99 })), partition: 0 },
        { key: "t1", value: "null", partition: 0 },
        { key: "t1", value: `[${observation("t1", { temp: 99 })}]`, partition: 0 },
        { key: "t1", value: "7", partition: 0 },
        { key: "t1", value: observation("t1", { temp: 40 }), partition: 0 },
      ],
    });
    await until(() => sink.actions.length === 2, 20_000);
    expect(sink.actions.map((a) => a.idempotencyKey)).toEqual([
      `hot:t1:kafka:${topic}:0:0:0`,
      `hot:t1:kafka:${topic}:0:10:0`,
    ]);
    const body = await json(await t.call("GET", "/observations/dead-letters", { user: "admin" }));
    expect(body.deadLetters.map((d: { reason: string; offset: string }) => `${d.offset}:${d.reason}`)).toEqual([
      "9:invalid-observation",
      "8:invalid-observation",
      "7:invalid-observation",
      "6:invalid-observation",
      "5:wrong-type",
      "4:missing-timestamp",
      "3:unknown-thing",
      "2:not-json",
      "1:not-json",
    ]);
    expect(body.deadLetters[0]).toMatchObject({ source: `kafka:${topic}`, partition: 0 });
  });

  it("a rule change is picked up while consuming", async () => {
    t.dms.services.bus.emit("rule.changed", {
      id: "cold",
      rule: { ...hot, id: "cold", expression: [{ operator: "lt", resource: "temp", value: 0 }] },
    });
    await producer.send({ topic, messages: [{ key: "t2", value: observation("t2", { temp: -3 }), partition: 1 }] });
    await until(() => sink.actions.some((a) => a.ruleId === "cold"), 20_000);
    expect(sink.actions.filter((a) => a.ruleId === "cold").map((a) => a.thingName)).toEqual(["t2"]);
  });
});

describe("KafkaObservationSource", () => {
  it("does not commit offsets before the batch's handle (actions handed over) resolves", async () => {
    const topic = `engine-commit-${randomUUID()}`;
    const groupId = `g-${topic}`;
    await createTopic(brokers, topic, 1);
    await producer.send({
      topic,
      messages: [1, 2, 3].map((i) => ({ key: "t1", value: observation("t1", { temp: i }) })),
    });

    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const seen: RawObservation[] = [];
    const source = new KafkaObservationSource({ brokers: brokers.split(","), topic, groupId });
    await source.start(async (batch) => {
      seen.push(...batch);
      await gate;
    });
    const admin = kafka.admin();
    await admin.connect();
    try {
      const committed = async (): Promise<string> =>
        (await admin.fetchOffsets({ groupId, topics: [topic] }))[0]!.partitions[0]!.offset;
      await until(() => seen.length === 3, 20_000);
      await new Promise((r) => setTimeout(r, 1500));
      expect(await committed()).toBe("-1");
      release();
      await until(async () => (await committed()) === "3", 20_000);
      expect(seen.map((r) => r.position)).toEqual(
        [0, 1, 2].map((o) => ({ source: `kafka:${topic}`, partition: 0, offset: String(o), epoch: 0 })),
      );
    } finally {
      await admin.disconnect();
      await source.stop();
    }
  });
});
