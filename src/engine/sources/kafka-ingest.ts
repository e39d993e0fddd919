import { topicProducer, type TopicLayout } from "../../kafka/index.js";
import type { Logger } from "../../observability/index.js";
import type { ObservationIngest } from "../ingest.js";

/** The observations topic as a way in from inside the service, when Kafka is on. */
export interface KafkaIngest {
  /**
   * SET_RESOURCE and the MQTT bridge's decoded observations: each produced keyed by its thingName,
   * so the engine process owning that partition evaluates it. The `source` name is not carried: on
   * the topic the observation is `kafka:<topic>:...` like any other.
   */
  ingest: ObservationIngest;
  close(): Promise<void>;
}

/** Produces to the observations topic; resolves when the broker acknowledged (acks -1), not when evaluated. */
export function kafkaIngest(brokers: string, topic: string, layout: TopicLayout, logger: Logger): KafkaIngest {
  const producer = topicProducer({ brokers, topic, layout, clientId: "dms-ingest", logger, what: "observations" });
  return {
    ingest: (observations) => producer.send(observations.map((o) => ({ key: o.thingName, value: JSON.stringify(o) }))),
    close: () => producer.close(),
  };
}
