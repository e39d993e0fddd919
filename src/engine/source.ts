import type { RawObservation } from "./types.js";

/**
 * Where observations come from (Kafka, `POST /observations`, the MQTT bridge).
 * A source calls `handle` with a batch and moves past it (commits offsets)
 * only after the returned promise resolves, which happens once the batch's
 * triggered actions are durably handed to the ActionSink.
 */
export interface ObservationSource {
  readonly name: string;
  start(handle: (batch: readonly RawObservation[]) => Promise<void>): Promise<void>;
  stop(): Promise<void>;
}
