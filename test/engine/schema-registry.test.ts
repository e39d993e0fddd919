import { randomUUID } from "node:crypto";
import { SchemaRegistry, SchemaType } from "@kafkajs/confluent-schema-registry";
import { Kafka, logLevel, type Producer } from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTopic, kafkaEnv, startKafka } from "../support/kafka.js";
import { SCHEMA_REGISTRY_START_TIMEOUT_MS, startSchemaRegistry } from "../support/schema-registry.js";
import { startTestDms, type TestDms } from "../support/dms.js";
import { json } from "../support/http.js";
import { CollectingSink, hot } from "./support.js";
import { until } from "../support/wait.js";

const AVRO = JSON.stringify({
  type: "record",
  name: "Observation",
  namespace: `dms.test.t${randomUUID().replace(/-/g, "")}`,
  fields: [
    { name: "thingName", type: "string" },
    { name: "timestamp", type: "long" },
    { name: "state", type: { type: "record", name: "State", fields: [{ name: "temp", type: "double" }] } },
  ],
});
const JSON_SCHEMA = JSON.stringify({
  $schema: "http://json-schema.org/draft-07/schema#",
  type: "object",
  properties: { thingName: { type: "string" }, timestamp: { type: "number" }, state: { type: "object" } },
  required: ["thingName", "timestamp"],
});

let t: TestDms;
let producer: Producer;
let registry: SchemaRegistry;
const sink = new CollectingSink();
const topic = `engine-wire-${randomUUID()}`;

beforeAll(async () => {
  const [brokers, url] = await Promise.all([startKafka(), startSchemaRegistry()]);
  registry = new SchemaRegistry({ host: url });
  await createTopic(brokers, topic, 1);
  const kafka = new Kafka({ clientId: "engine-wire-test", brokers: brokers.split(","), logLevel: logLevel.NOTHING });
  producer = kafka.producer();
  await producer.connect();
  t = await startTestDms({
    env: { DMS_ROLES: "api,engine", ...kafkaEnv(brokers, topic), SCHEMA_REGISTRY_URL: url },
    start: { actionSink: sink },
  });
  t.dms.services.bus.emit("rule.changed", { id: hot.id, rule: hot });
}, SCHEMA_REGISTRY_START_TIMEOUT_MS);
afterAll(async () => {
  await producer?.disconnect();
  await t?.close();
});

describe("the Confluent wire format through a real registry (Apicurio ccompat)", () => {
  it("decodes Avro and JSON Schema messages, plain JSON beside them, and dead-letters an unknown schema id", async () => {
    const avro = await registry.register({ type: SchemaType.AVRO, schema: AVRO }, { subject: `${topic}-avro` });
    const js = await registry.register({ type: SchemaType.JSON, schema: JSON_SCHEMA }, { subject: `${topic}-json` });
    const avroBytes = await registry.encode(avro.id, {
      thingName: "t1",
      timestamp: 1763000000000,
      state: { temp: 31.5 },
    });
    const jsonBytes = await registry.encode(js.id, { thingName: "t2", timestamp: 1763000000001, state: { temp: 40 } });
    const unknownId = Buffer.from([0, 0x7f, 0xff, 0xff, 0xf0, 1, 2, 3]);
    await producer.send({
      topic,
      messages: [
        { key: "t1", value: avroBytes },
        { key: "t2", value: jsonBytes },
        { key: "t1", value: unknownId },
        { key: "t1", value: JSON.stringify({ thingName: "t1", timestamp: 1763000000002, state: { temp: 45 } }) },
      ],
    });
    await until(() => sink.actions.length === 3, 30_000);
    expect(sink.actions.map((a) => [a.thingName, a.payload.observation.state.temp])).toEqual([
      ["t1", 31.5],
      ["t2", 40],
      ["t1", 45],
    ]);
    const body = await json(await t.call("GET", "/observations/dead-letters", { user: "admin" }));
    expect(body.deadLetters).toHaveLength(1);
    expect(body.deadLetters[0]).toMatchObject({ reason: "undecodable", offset: "2", partition: 0 });
  });
});
