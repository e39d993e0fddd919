import type { Observation } from "./types.js";

/**
 * Feeds observations into the engine from inside the service: SET_RESOURCE
 * results, and with Kafka the MQTT bridge's decoded device observations.
 * Without Kafka it is the engine's own (resolves once stored and evaluated);
 * with `KAFKA_BROKERS` set it produces them to the observations topic and
 * resolves once the broker acknowledged them, the partition's owner
 * evaluating them later. Either way they go through the one decode
 * (`decode.ts`) before they are evaluated. A rejection means they were not taken.
 */
export type ObservationIngest = (observations: readonly Observation[], source: string) => Promise<void>;
