import { topicProducer, type TopicLayout } from "../../kafka/index.js";
import type { Logger } from "../../observability/index.js";
import type { ObservationIngest } from "../ingest.js";

/** What one device published: its thingName (from the topic) and the items of the payload. */
export interface DeviceItems {
  thingName: string;
  items: readonly unknown[];
}

/** The observations topic as a way in from inside the service, when Kafka is on. */
export interface KafkaIngest {
  /**
   * SET_RESOURCE: each observation produced keyed by its thingName, so the
   * engine process owning that partition evaluates it. The `source` name is
   * not carried: on the topic the observation is `kafka:<topic>:...` like any other.
   */
  ingest: ObservationIngest;
  /**
   * The MQTT bridge: a group commit of devices' items (parsed observations, or
   * the raw bytes that were not JSON), each keyed by its device's thingName, in
   * one produce request where they fit. Bytes go as they are, so the engine
   * dead-letters them with the reason; anything else goes as JSON.
   */
  produce(devices: readonly DeviceItems[]): Promise<void>;
  close(): Promise<void>;
}

/** Produces to the observations topic; resolves when the broker acknowledged (acks -1), not when evaluated. */
export function kafkaIngest(brokers: string, topic: string, layout: TopicLayout, logger: Logger): KafkaIngest {
  const producer = topicProducer({ brokers, topic, layout, clientId: "dms-ingest", logger, what: "observations" });
  return {
    ingest: (observations) => producer.send(observations.map((o) => ({ key: o.thingName, value: JSON.stringify(o) }))),
    produce: (devices) =>
      producer.send(
        devices.flatMap(({ thingName, items }) =>
          items.map((item) => ({ key: thingName, value: Buffer.isBuffer(item) ? item : JSON.stringify(item) })),
        ),
      ),
    close: () => producer.close(),
  };
}
