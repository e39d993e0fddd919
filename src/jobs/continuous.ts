import type { ThingRegistry } from "../things/index.js";
import type { Rollout } from "./rollout.js";
import type { JobStore } from "./store.js";

/**
 * What the registry's changes do to jobs, inside the job transaction: a thing
 * added to a group a continuous job targets gets an execution, a thing taken
 * out of every target loses its queued one (REMOVED), a deleted thing's open
 * executions are REMOVED (which may complete a snapshot job).
 */
export class ContinuousJobs {
  constructor(
    private readonly store: JobStore,
    private readonly registry: ThingRegistry,
    private readonly rollout: Rollout,
    private readonly touch: (thingName: string) => void,
  ) {}

  /** Starts an execution for a thing newly targeted by a continuous job, unless it has one that counts. */
  async startFor(jobId: string, thingName: string, now: number): Promise<void> {
    const latest = await this.store.execution(jobId, thingName);
    if (!latest) await this.store.queue(jobId, thingName, 1, now);
    else if (latest.status === "REMOVED") await this.store.queue(jobId, thingName, latest.executionNumber + 1, now);
  }

  async thingAdded(groupId: string, thingName: string, now: number): Promise<void> {
    for (const job of await this.store.continuousJobsOf(groupId)) {
      await this.startFor(job.jobId, thingName, now);
      await this.rollout.release(job, now);
    }
  }

  /** A deleted thing can never finish: its open executions are REMOVED, which may complete snapshot jobs. */
  async thingDeleted(thingName: string, now: number): Promise<void> {
    for (const jobId of await this.store.removeOpenOf(thingName, now)) await this.rollout.maybeComplete(jobId, now);
  }

  async thingRemoved(groupId: string, thingName: string, now: number): Promise<void> {
    const stillIn = new Set(this.registry.groupsOf(thingName));
    for (const job of await this.store.continuousJobsOf(groupId)) {
      const direct = job.targetThings.includes(thingName);
      if (direct || (await this.store.groupIds(job.jobId)).some((g) => stillIn.has(g))) continue;
      const latest = await this.store.execution(job.jobId, thingName);
      if (latest?.status !== "QUEUED") continue;
      await this.store.markRemoved(latest, now);
      if (latest.released) this.touch(thingName);
    }
  }
}
