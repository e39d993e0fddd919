import type { RawObservation } from "../types.js";

/**
 * Where observations come from (Kafka, `POST /observations`, the MQTT bridge).
 * A source calls `handle` with a batch and moves past it (commits offsets,
 * answers the request) only after the returned promise resolves, which happens
 * once the batch is stored, evaluated and its triggered actions are durably
 * handed to the ActionSink. A stream source hands over raw messages (`In`
 * defaults to `RawObservation`) and needs no answer; the HTTP source hands over
 * what it decoded and authorized, and answers with the engine's result (`Out`).
 */
export interface ObservationSource<In = RawObservation, Out = void> {
  readonly name: string;
  start(handle: (batch: readonly In[]) => Promise<Out>): Promise<void>;
  stop(): Promise<void>;
}
