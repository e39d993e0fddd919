import { Kafka, logLevel } from "kafkajs";
import type { Logger } from "../observability/index.js";

/** How dms creates the topics it uses when they are missing (`KAFKA_TOPIC_PARTITIONS`, `KAFKA_TOPIC_REPLICATION`). */
export interface TopicLayout {
  partitions: number;
  replication: number;
}

export const DEFAULT_TOPIC_LAYOUT: TopicLayout = { partitions: 6, replication: 1 };

/**
 * Creates those of `topics` the cluster lacks and waits until every partition
 * of each has a leader: a consumer subscribing to a topic that is still being
 * made fails with "This server does not host this topic-partition". Existing
 * topics are left as they are. Throws when the brokers cannot be reached.
 */
export async function ensureTopics(
  brokers: string,
  topics: readonly string[],
  layout: TopicLayout,
  logger: Logger,
): Promise<void> {
  const kafka = new Kafka({ clientId: "dms-admin", brokers: brokers.split(","), logLevel: logLevel.NOTHING });
  const admin = kafka.admin({ retry: { retries: 2 } });
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    const missing = topics.filter((t) => !existing.has(t));
    if (missing.length > 0) {
      // false when another process created them first: they exist either way.
      await admin.createTopics({
        waitForLeaders: true,
        topics: missing.map((topic) => ({
          topic,
          numPartitions: layout.partitions,
          replicationFactor: layout.replication,
        })),
      });
      logger.info({ topics: missing, ...layout }, "kafka topics created");
    }
    await waitForLeaders(admin, topics);
  } finally {
    await admin.disconnect().catch(() => {});
  }
}

async function waitForLeaders(admin: ReturnType<Kafka["admin"]>, topics: readonly string[]): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    const { topics: meta } = await admin.fetchTopicMetadata({ topics: [...topics] });
    const leaderless = meta.filter((t) => t.partitions.length === 0 || t.partitions.some((p) => p.leader < 0));
    if (leaderless.length === 0) return;
    if (attempt >= 50) throw new Error(`no leader for ${leaderless.map((t) => t.name).join(", ")}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

export interface RetryOptions {
  logger: Logger;
  /** What is being tried, for the log line. */
  what: string;
  /** True once the caller gave up waiting (the service stops): no further attempt. */
  stopped: () => boolean;
  /** Told about each failure, e.g. to set a readiness condition's detail. */
  onFailure?: (err: unknown, attempt: number, nextInMs: number) => void;
  firstDelayMs?: number;
  maxDelayMs?: number;
}

/**
 * Runs `attempt` until it succeeds, waiting twice as long after each failure
 * (from `firstDelayMs`, capped at `maxDelayMs`, with jitter), so a service
 * started before its broker waits for it instead of exiting. Resolves to
 * undefined when stopped first.
 */
export async function retryWithBackoff<T>(attempt: () => Promise<T>, options: RetryOptions): Promise<T | undefined> {
  const first = options.firstDelayMs ?? 500;
  const max = options.maxDelayMs ?? 10_000;
  for (let n = 1; !options.stopped(); n++) {
    try {
      return await attempt();
    } catch (err) {
      if (options.stopped()) break;
      const delay = Math.round(Math.min(max, first * 2 ** (n - 1)) * (0.75 + Math.random() * 0.5));
      options.logger.warn({ err, attempt: n, retryInMs: delay }, `${options.what} failed; retrying`);
      options.onFailure?.(err, n, delay);
      await sleepUnless(delay, options.stopped);
    }
  }
  return undefined;
}

/** Sleeps `ms`, waking early (checking every 100 ms) once `stopped` says so. */
async function sleepUnless(ms: number, stopped: () => boolean): Promise<void> {
  const end = Date.now() + ms;
  while (!stopped() && Date.now() < end) {
    await new Promise((r) => setTimeout(r, Math.min(100, end - Date.now())));
  }
}
