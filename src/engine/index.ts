export type { Observation, NestedObservation, RawObservation, SourcePosition } from "./types.js";
export type { ObservationSource } from "./source.js";
export type { StateStore, ThingState, ThresholdState } from "./state.js";
export type { ObservationIngest } from "./ingest.js";
