import { Kafka, Partitioners, logLevel, type Message, type Producer } from "kafkajs";
import type { Logger } from "../observability/index.js";
import { ensureTopics, type TopicLayout } from "./topics.js";

export interface TopicProducerOptions {
  /** Bootstrap servers, comma-separated (`KAFKA_BROKERS`). */
  brokers: string;
  topic: string;
  clientId: string;
  logger: Logger;
  /** What the producer carries, for the log line ("events", "observations"). */
  what: string;
  /** Creates the topic this way when it is missing, before the first send. */
  layout: TopicLayout;
}

/** One topic's producer, shared by the events publisher and the observations ingest. */
export interface TopicProducer {
  /** Resolves once every in-sync replica acknowledged (acks -1); rejects when the produce failed. */
  send(messages: Message[]): Promise<void>;
  close(): Promise<void>;
}

/** Bytes of message values one produce request carries at most (the broker takes ~1 MiB a batch). */
const REQUEST_BYTES = 256 * 1024;

interface Pending {
  messages: Message[];
  bytes: number;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/**
 * An idempotent producer that connects on first use. Keys map to partitions as
 * with the Java client (`DefaultPartitioner`). Sends go out one request at a
 * time, in the order they were asked for (kafkajs does not keep the order of
 * concurrent sends, and one thing's observations must stay in order); what
 * queues meanwhile goes in the next request. After a failed connect or send
 * the producer is dropped, so the next send (the outbox's retry) connects anew.
 */
export function topicProducer(options: TopicProducerOptions): TopicProducer {
  const { topic, logger, what } = options;
  const kafka = new Kafka({
    clientId: options.clientId,
    brokers: options.brokers.split(","),
    logLevel: logLevel.ERROR,
  });
  let connecting: Promise<Producer> | undefined;
  let closed = false;
  const drop = (failed: Promise<Producer>): void => {
    if (connecting !== failed) return;
    connecting = undefined;
    failed.then((p) => p.disconnect()).catch(() => {});
  };
  const connected = (): Promise<Producer> => {
    if (closed) return Promise.reject(new Error(`${what} producer is closed`));
    if (connecting) return connecting;
    const attempt = (async () => {
      // Made here when missing, with the configured partitions and replication, rather than left
      // to the broker's auto-creation (often off in production, and with the broker's defaults).
      await ensureTopics(options.brokers, [topic], options.layout, logger);
      const p = kafka.producer({
        allowAutoTopicCreation: false,
        idempotent: true,
        maxInFlightRequests: 1,
        createPartitioner: Partitioners.DefaultPartitioner,
      });
      await p.connect();
      logger.info({ topic }, `${what} producer connected`);
      return p;
    })();
    connecting = attempt;
    attempt.catch(() => drop(attempt));
    return attempt;
  };
  const produce = async (messages: Message[]): Promise<void> => {
    const attempt = connected();
    const p = await attempt;
    try {
      await p.send({ topic, acks: -1, messages });
    } catch (err) {
      drop(attempt);
      throw err;
    }
  };
  const queue: Pending[] = [];
  let flushing: Promise<void> | undefined;
  const flush = async (): Promise<void> => {
    while (queue.length > 0) {
      let bytes = 0;
      let n = 0;
      while (n < queue.length && (n === 0 || bytes + queue[n]!.bytes <= REQUEST_BYTES)) bytes += queue[n++]!.bytes;
      const taken = queue.splice(0, n);
      try {
        await produce(taken.flatMap((t) => t.messages));
        for (const t of taken) t.resolve();
      } catch (err) {
        for (const t of taken) t.reject(err);
      }
    }
    flushing = undefined;
  };
  const size = (m: Message): number => (m.value === null ? 0 : Buffer.byteLength(m.value)) + 64;
  return {
    send: (messages) => {
      if (messages.length === 0) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        queue.push({ messages, bytes: messages.reduce((sum, m) => sum + size(m), 0), resolve, reject });
        flushing ??= flush();
      });
    },
    close: async () => {
      await flushing;
      closed = true;
      const attempt = connecting;
      connecting = undefined;
      const p = await attempt?.catch(() => undefined);
      await p?.disconnect();
    },
  };
}
