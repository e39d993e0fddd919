/** A nested object of an observation; without a type it has type `untyped`. */
export interface NestedObservation {
  type?: string;
  id?: string;
  state: Record<string, unknown>;
}

/** An observation as it travels on Kafka, in `POST /observations` and from the MQTT bridge. */
export interface Observation {
  thingName: string;
  /** Epoch milliseconds or ISO 8601 on the wire; epoch milliseconds once decoded. */
  timestamp: number | string;
  state: Record<string, unknown>;
  nested?: NestedObservation[];
}

/** Where a raw observation came from, for dead letters and offset commits. */
export interface SourcePosition {
  source: string;
  partition?: number;
  offset?: string;
  /**
   * How many times the source went back on this partition (seeked to its committed offset): a chunk
   * fetched after the latest going-back has a greater one than the chunks handed over before it.
   */
  epoch?: number;
}

/** A message's bytes and origin, as a stream source reads them, before the decode (`decode.ts`). */
export interface RawObservation {
  key?: string | null;
  value: Uint8Array;
  position: SourcePosition;
}
