import { runServiceScript } from "./service-script.js";
import { Kafka, logLevel } from "kafkajs";

/**
 * Starts (or reuses) the single-node test broker and returns its bootstrap servers, e.g. "127.0.0.1:9092".
 * Honours the env vars of scripts/kafka.sh (KAFKA_PORT, KAFKA_CONTROLLER_PORT, ...).
 */
export async function startKafka(env: Record<string, string> = {}): Promise<string> {
  return runServiceScript("kafka.sh", "start", "KAFKA_BROKERS", env);
}

/** Stops the test broker and deletes its state; `env` names a broker of the test's own (never the shared one). */
export async function stopKafka(env: Record<string, string> = {}): Promise<void> {
  await runServiceScript("kafka.sh", "stop", undefined, env);
}

/** Creates a topic (if missing) and waits until every partition has a leader. */
export async function createTopic(brokers: string, topic: string, partitions: number): Promise<void> {
  const kafka = new Kafka({ clientId: "dms-test-admin", brokers: brokers.split(","), logLevel: logLevel.WARN });
  const admin = kafka.admin();
  await admin.connect();
  try {
    const created = await admin.createTopics({
      topics: [{ topic, numPartitions: partitions, replicationFactor: 1 }],
      waitForLeaders: true,
    });
    if (!created) {
      // Already there (e.g. auto-created); make sure it is the shape the caller asked for.
      const meta = await admin.fetchTopicMetadata({ topics: [topic] });
      const existing = meta.topics[0]?.partitions.length ?? 0;
      if (existing !== partitions) {
        throw new Error(`topic ${topic} already exists with ${existing} partitions, wanted ${partitions}`);
      }
    }
  } finally {
    await admin.disconnect();
  }
}

/** The env of a dms that reads observations from `topic` on `brokers`, in a consumer group named after the topic. */
export function kafkaEnv(brokers: string, topic: string): Record<string, string> {
  return { KAFKA_BROKERS: brokers, KAFKA_OBSERVATIONS_TOPIC: topic, KAFKA_GROUP_ID: `g-${topic}` };
}
