import { randomUUID } from "node:crypto";
import { describe, it, expect, beforeAll } from "vitest";
import { Kafka, logLevel, Partitioners } from "kafkajs";
import { createTopic, startKafka } from "../support/kafka.js";

const MESSAGES = 100;

describe("real Kafka broker", () => {
  let brokers = "";

  beforeAll(async () => {
    brokers = await startKafka();
  });

  it("round-trips 100 keyed messages through a 3-partition topic and a consumer group", async () => {
    const id = randomUUID();
    const topic = `dms-broker-test-${id}`;
    await createTopic(brokers, topic, 3);

    const kafka = new Kafka({
      clientId: `dms-broker-test-${id}`,
      brokers: brokers.split(","),
      logLevel: logLevel.WARN,
    });
    const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
    const consumer = kafka.consumer({ groupId: `dms-broker-test-${id}` });

    const sent = new Map<string, string>();
    for (let i = 0; i < MESSAGES; i++) sent.set(`key-${i}`, `value-${i}`);

    const received = new Map<string, string>();
    const partitionsSeen = new Set<number>();
    try {
      await producer.connect();
      await producer.send({
        topic,
        messages: [...sent].map(([key, value]) => ({ key, value })),
      });

      await consumer.connect();
      await consumer.subscribe({ topic, fromBeginning: true });
      const allArrived = new Promise<void>((resolve) => {
        void consumer.run({
          eachMessage: async ({ partition, message }) => {
            const key = message.key?.toString() ?? "<no key>";
            received.set(key, message.value?.toString() ?? "<no value>");
            partitionsSeen.add(partition);
            if (received.size >= MESSAGES) resolve();
          },
        });
      });
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`only ${received.size}/${MESSAGES} messages arrived`)), 25_000);
      });
      await Promise.race([allArrived, timeout]).finally(() => clearTimeout(timer));
    } finally {
      await consumer.disconnect();
      await producer.disconnect();
    }

    expect(received.size).toBe(MESSAGES);
    expect(received).toEqual(sent);
    // 100 distinct keys hash onto more than one of the 3 partitions.
    expect(partitionsSeen.size).toBeGreaterThan(1);
    for (const p of partitionsSeen) expect(p).toBeLessThan(3);
  });
});
