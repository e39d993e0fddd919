/** An observation as stored and as FIND answers it in `_source`. */
export interface ObservationDocument {
  thingName: string;
  thingType: string;
  domain: string;
  /** Epoch milliseconds. */
  timestamp: number;
  state: Record<string, unknown>;
  nested?: { type?: string; id?: string; state: Record<string, unknown> }[];
}

export interface StoredObservationInput {
  /**
   * Where a replayable source read it (a Kafka partition and offset): a replay
   * after a crash hands it over again, and it is stored once. Absent for inputs
   * that are never replayed (HTTP, MQTT without Kafka).
   */
  from?: { stream: string; offset: number };
  document: ObservationDocument;
}
