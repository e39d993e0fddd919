import { randomUUID } from "node:crypto";
import { Kafka, logLevel } from "kafkajs";
import { afterAll, describe, expect, it } from "vitest";
import { startTestDms, type TestDms } from "../support/dms.js";
import { json } from "../support/http.js";
import { storedObservations } from "../support/observations.js";
import { freePortRange } from "../support/ports.js";
import { kafkaEnv, startKafka, stopKafka } from "../support/kafka.js";
import { until } from "../support/wait.js";

const observation = (thingName: string, ts: number) =>
  JSON.stringify({ thingName, timestamp: ts, state: { temp: 20 } });

async function produce(brokers: string, topic: string, values: string[]): Promise<void> {
  const kafka = new Kafka({ clientId: "topics-test", brokers: brokers.split(","), logLevel: logLevel.NOTHING });
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  try {
    await producer.send({ topic, messages: values.map((value) => ({ key: "t1", value })) });
  } finally {
    await producer.disconnect();
  }
}

async function partitions(brokers: string, topic: string): Promise<number> {
  const kafka = new Kafka({ clientId: "topics-test", brokers: brokers.split(","), logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  try {
    const meta = await admin.fetchTopicMetadata({ topics: [topic] });
    return meta.topics[0]!.partitions.length;
  } finally {
    await admin.disconnect();
  }
}

const stored = (t: TestDms, ts: number): number => storedObservations(t, ts, ts).length;

const readyz = async (t: TestDms) => {
  const res = await fetch(`${t.url}/readyz`);
  return {
    status: res.status,
    body: (await json(res)) as { conditions: { name: string; ready: boolean; detail?: string }[] },
  };
};

describe("Kafka topics dms uses", () => {
  let t: TestDms | undefined;
  afterAll(() => t?.close());

  it("are created when missing, with the configured partitions, and consumed from", async () => {
    const brokers = await startKafka();
    // A name the shared broker has never seen; 3 partitions where the broker's own default is 6.
    const topic = `fresh-${randomUUID()}`;
    t = await startTestDms({
      env: { DMS_ROLES: "api,engine", ...kafkaEnv(brokers, topic), KAFKA_TOPIC_PARTITIONS: "3" },
    });
    await until(async () => (await readyz(t!)).status === 200, 60_000, "/readyz 200");
    expect(await partitions(brokers, topic)).toBe(3);
    const ts = Date.now();
    await produce(brokers, topic, [observation("t1", ts)]);
    await until(() => stored(t!, ts) === 1, 30_000, "the observation stored");
    // Caught up on the partition it read: lag 0 there, reported per partition. The row is stored before
    // the batch is done (its state may still be on its way to the table): the lag follows.
    const caughtUp = new RegExp(`dms_kafka_consumer_lag\\{topic="${topic}",partition="\\d"\\} 0`);
    const metricsText = async (): Promise<string> => (await fetch(`${t!.url}/metrics`)).text();
    await until(async () => caughtUp.test(await metricsText()), 10_000, "the lag reported");
    const metrics = await metricsText();
    expect(metrics).toMatch(caughtUp);
    expect(metrics).toMatch(new RegExp(`dms_ingest_observations_total\\{source="kafka:${topic}"\\} 1`));
    await t.close();
    t = undefined;
  }, 120_000);
});

describe("a broker down when dms starts", () => {
  let t: TestDms | undefined;
  let own: Record<string, string> | undefined;
  afterAll(async () => {
    await t?.close();
    if (own) await stopKafka(own);
  });

  it("is waited for: dms runs, /readyz says why it is not ready, and consumes once the broker is up", async () => {
    // A broker of this test's own on free ports, never the shared one on 9092.
    const { first } = await freePortRange(2);
    const env = {
      KAFKA_PORT: String(first),
      KAFKA_CONTROLLER_PORT: String(first + 1),
      KAFKA_STATE_DIR: `/tmp/dms-kafka-stream-test-${first}`,
    };
    const brokers = `127.0.0.1:${first}`;
    const topic = "dms.observations";
    t = await startTestDms({ env: { DMS_ROLES: "api,engine", ...kafkaEnv(brokers, topic) }, awaitReady: false });
    const before = await readyz(t);
    expect(before.status).toBe(503);
    expect(before.body.conditions).toContainEqual({ name: `kafka:${topic}`, ready: false, detail: expect.any(String) });
    // The probes answer meanwhile; operations wait for the consumer, as for any condition of starting.
    expect((await fetch(`${t.url}/healthz`)).status).toBe(200);
    const early = await t.call("GET", "/rules", { headers: { authorization: "Bearer x" } });
    expect(early.status).toBe(503);
    expect(await json(early)).toMatchObject({ messageKey: "SERVICE_STARTING" });

    own = env;
    await startKafka(env);
    await until(async () => (await readyz(t!)).status === 200, 90_000, "/readyz 200 once the broker is up");
    const ts = Date.now();
    await produce(brokers, topic, [observation("t1", ts)]);
    await until(() => stored(t!, ts) === 1, 30_000, "the observation stored");
  }, 300_000);
});
