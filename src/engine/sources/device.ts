import type { DeadLetterStore } from "../dead-letters.js";
import type { Ingested } from "../decode.js";
import { deadLetter } from "../checks.js";
import type { ObservationIngest } from "../ingest.js";

export interface DeviceIngestOptions {
  /** The observations topic's producer, when Kafka is on. */
  topic?: ObservationIngest | undefined;
  /** This process's engine (`EngineService.accept`), used without Kafka. */
  engine?: ((batch: readonly Ingested[]) => Promise<unknown>) | undefined;
  deadLetters: DeadLetterStore;
  /** The domain of a known thing: who may read its dead letters. */
  domainOf: (thingName: string) => string | undefined;
  clock: () => number;
}

/**
 * Where a device's decoded inputs go (`decodeDevicePayload` of the MQTT bridge's payloads): with
 * Kafka, its observations to the topic and its refusals to this process's dead letters (nothing the
 * decode refused goes on, to be read differently elsewhere); without Kafka, both to this process's
 * engine. Undefined when neither is there: device observations are not taken.
 */
export function deviceIngest(
  options: DeviceIngestOptions,
): ((items: readonly Ingested[]) => Promise<unknown>) | undefined {
  const { topic, engine, deadLetters, domainOf, clock } = options;
  if (topic === undefined) return engine;
  return (items) => {
    const letters = [];
    const observations = [];
    for (const item of items) {
      if (item.observation !== undefined) {
        observations.push(item.observation);
        continue;
      }
      const { reason, message, thingName } = item.refusal;
      const domain = thingName === undefined ? undefined : domainOf(thingName);
      letters.push(deadLetter(item, reason, message, clock(), thingName, domain));
    }
    if (letters.length > 0) deadLetters.insertBatch(letters);
    return topic(observations, "mqtt");
  };
}
