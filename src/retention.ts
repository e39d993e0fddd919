import type { Config } from "./config/index.js";
import { FINISHED_SQL } from "./jobs/index.js";
import type { ObservationStore } from "./observations/index.js";
import type { RetentionTarget } from "./store/index.js";

/**
 * What ages out and after how long (`DMS_*_RETENTION`; unset keeps forever),
 * beside `migrations.ts` because it names other capabilities' tables. Each
 * condition is answered by an index in the order it deletes.
 */
export function retentionTargets(config: Config, observations: ObservationStore): RetentionTarget[] {
  return [
    // By the observation's own timestamp, the time FIND and exports query by: whole days dropped,
    // the rows of the day the cutoff cuts deleted (the store does both, on its writer thread if it has one).
    {
      kind: "observations",
      windowMs: config.DMS_OBSERVATION_RETENTION,
      remove: (cutoff, limit) => observations.deleteOlderThan(cutoff, limit),
    },
    {
      kind: "dead-letters",
      table: "engine_dead_letters",
      olderThan: "created_at < ?",
      orderBy: "created_at",
      windowMs: config.DMS_DEAD_LETTER_RETENTION,
    },
    { kind: "events", table: "events", olderThan: "ts < ?", orderBy: "ts", windowMs: config.DMS_EVENT_RETENTION },
    // Finished executions only, by when they last changed (finished); running ones are kept.
    {
      kind: "job-executions",
      table: "job_executions",
      olderThan: `status IN (${FINISHED_SQL}) AND last_updated_at < ?`,
      orderBy: "last_updated_at",
      windowMs: config.DMS_JOB_EXECUTION_RETENTION,
    },
  ];
}
