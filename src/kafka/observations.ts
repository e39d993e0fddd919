import type { Logger } from "../observability/index.js";
import { topicProducer } from "./producer.js";
import type { TopicLayout } from "./topics.js";

/** The observations topic as a way in from inside the service, when Kafka is on. */
export interface ObservationsProducer {
  /**
   * SET_RESOURCE and the MQTT bridge's decoded observations: each produced keyed by its thingName,
   * so the engine process owning that partition evaluates it. A source name (the engine's
   * `ObservationIngest` passes one) is not carried: on the topic the observation is
   * `kafka:<topic>:...` like any other.
   */
  ingest(observations: readonly { thingName: string }[]): Promise<void>;
  close(): Promise<void>;
}

/** Produces to the observations topic; resolves when the broker acknowledged (acks -1), not when evaluated. */
export function observationsProducer(
  brokers: string,
  topic: string,
  layout: TopicLayout,
  logger: Logger,
): ObservationsProducer {
  const producer = topicProducer({ brokers, topic, layout, clientId: "dms-ingest", logger, what: "observations" });
  return {
    ingest: (observations) => producer.send(observations.map((o) => ({ key: o.thingName, value: JSON.stringify(o) }))),
    close: () => producer.close(),
  };
}
