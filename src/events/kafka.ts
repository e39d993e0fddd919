import { Kafka, Partitioners, type Producer } from "kafkajs";
import type { Logger } from "../observability/index.js";
import type { EventRecord } from "./store.js";

/** Where stored events go besides the store: the events topic when Kafka is on. */
export interface EventPublisher {
  publish(event: EventRecord): Promise<void>;
  close(): Promise<void>;
}

export const noPublisher: EventPublisher = { publish: async () => {}, close: async () => {} };

/**
 * Produces each event to `topic`, keyed by thingName so one thing's events
 * stay in order. Connects on first use; a failed produce rejects so the
 * outbox retries the EVENT action (the store keeps the event once).
 */
export function kafkaPublisher(brokers: string, topic: string, logger: Logger): EventPublisher {
  const kafka = new Kafka({ clientId: "dms-events", brokers: brokers.split(","), logLevel: 1 });
  let producer: Producer | undefined;
  let connecting: Promise<Producer> | undefined;
  const connected = (): Promise<Producer> => {
    connecting ??= (async () => {
      const p = kafka.producer({
        allowAutoTopicCreation: true,
        idempotent: true,
        maxInFlightRequests: 1,
        createPartitioner: Partitioners.DefaultPartitioner,
      });
      await p.connect();
      producer = p;
      logger.info({ topic }, "events producer connected");
      return p;
    })().catch((err: unknown) => {
      connecting = undefined;
      throw err;
    });
    return connecting;
  };
  return {
    publish: async (event) => {
      const p = await connected();
      await p.send({ topic, messages: [{ key: event.thingName, value: JSON.stringify(event) }] });
    },
    close: async () => {
      await producer?.disconnect();
    },
  };
}
