import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { Kafka, logLevel } from "kafkajs";

const execFileAsync = promisify(execFile);

const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
const script = fileURLToPath(new URL("../../scripts/kafka.sh", import.meta.url));

interface ExecError extends Error {
  stdout?: string;
  stderr?: string;
}

async function runScript(command: "start" | "stop"): Promise<string> {
  try {
    const { stdout } = await execFileAsync("bash", [script, command], {
      cwd: repoRoot,
      env: process.env,
      // The script waits up to 120 s for the broker itself (longer on a cold jar cache); this is only a backstop.
      timeout: 600_000,
      maxBuffer: 10 * 1024 * 1024,
    });
    return stdout;
  } catch (err) {
    const e = err as ExecError;
    throw new Error(`scripts/kafka.sh ${command} failed: ${e.message}\n${e.stderr ?? ""}`, { cause: err });
  }
}

/**
 * Starts (or reuses) the single-node test broker and returns its bootstrap servers, e.g. "127.0.0.1:9092".
 * Honours the env vars of scripts/kafka.sh (KAFKA_PORT, KAFKA_CONTROLLER_PORT, ...).
 */
export async function startKafka(): Promise<string> {
  const stdout = await runScript("start");
  const line = stdout
    .trim()
    .split("\n")
    .reverse()
    .find((l) => l.startsWith("KAFKA_BROKERS="));
  if (!line) throw new Error(`scripts/kafka.sh start printed no KAFKA_BROKERS line:\n${stdout}`);
  return line.slice("KAFKA_BROKERS=".length).trim();
}

/** Stops the test broker and deletes its state. */
export async function stopKafka(): Promise<void> {
  await runScript("stop");
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
