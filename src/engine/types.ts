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
}

/** Undecoded bytes and their origin, as a source hands them to the engine. */
export interface RawObservation {
  key?: string | null;
  value: Buffer | Uint8Array | string | object;
  position: SourcePosition;
}
