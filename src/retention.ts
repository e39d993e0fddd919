import type { Config } from "./config/index.js";
import type { ObservationStore } from "./observations/index.js";
import type { RetentionTarget } from "./store/index.js";
import type { Stores } from "./stores.js";

/**
 * What ages out and after how long (`DMS_*_RETENTION`; unset keeps forever): each store deletes
 * its own oldest rows, whichever database it is on.
 */
export function retentionTargets(
  config: Config,
  stores: Pick<Stores, "deadLetters" | "events" | "jobs"> & {
    /** The store observations are kept in: the database's (`stores.observations`) or OpenSearch's. */
    observations: { store: Pick<ObservationStore, "deleteOlderThan"> };
  },
): RetentionTarget[] {
  const { observations, deadLetters, events, jobs } = stores;
  return [
    // By the observation's own timestamp, the time FIND and exports query by: whole days dropped,
    // the rows of the day the cutoff cuts deleted (the store does both, on its writer thread if it has one).
    {
      kind: "observations",
      windowMs: config.DMS_OBSERVATION_RETENTION,
      remove: (cutoff, limit) => observations.store.deleteOlderThan(cutoff, limit),
    },
    {
      kind: "dead-letters",
      windowMs: config.DMS_DEAD_LETTER_RETENTION,
      remove: (cutoff, limit) => deadLetters.deleteOlderThan(cutoff, limit),
    },
    {
      kind: "events",
      windowMs: config.DMS_EVENT_RETENTION,
      remove: (cutoff, limit) => events.deleteOlderThan(cutoff, limit),
    },
    // Finished executions only, by when they last changed (finished); running ones are kept.
    {
      kind: "job-executions",
      windowMs: config.DMS_JOB_EXECUTION_RETENTION,
      remove: (cutoff, limit) => jobs.pruneFinished(cutoff, limit),
    },
  ];
}
