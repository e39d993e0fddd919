import { topicProducer, type TopicLayout } from "../kafka/index.js";
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
export function kafkaPublisher(brokers: string, topic: string, layout: TopicLayout, logger: Logger): EventPublisher {
  const producer = topicProducer({ brokers, topic, layout, clientId: "dms-events", logger, what: "events" });
  return {
    publish: (event) => producer.send([{ key: event.thingName, value: JSON.stringify(event) }]),
    close: () => producer.close(),
  };
}
