import type { Observation } from "./types.js";

/**
 * Feeds observations into the engine from inside the service: SET_RESOURCE
 * results and the MQTT bridge. Resolves once they are stored and evaluated.
 */
export type ObservationIngest = (observations: readonly Observation[], source: string) => Promise<void>;
