import type { Logger } from "../observability/index.js";
import type { StoredJob, JobStore } from "./store.js";

export const MINUTE = 60_000;

/**
 * How a job moves on by itself, inside the transaction of the change that
 * moved it: executions offered to devices at most `maximumPerMinute` per
 * one-minute window, a snapshot job completed once nothing is left open, a
 * job aborted when a failure type crosses its share (abortConfig).
 */
export class Rollout {
  constructor(
    private readonly store: JobStore,
    private readonly logger: Logger,
    /** A thing whose pending executions changed: its device is told after the commit. */
    private readonly touch: (thingName: string) => void,
  ) {}

  /** Offers queued executions to devices, within the job's per-minute budget. Returns how many. */
  async release(job: StoredJob, now: number): Promise<number> {
    if (job.status !== "IN_PROGRESS") return 0;
    if (job.maximumPerMinute === null) {
      const released = await this.store.release(job.jobId, null);
      for (const t of released) this.touch(t);
      return released.length;
    }
    let start = job.rolloutWindowStart;
    let count = job.rolloutWindowCount;
    if (now >= start + MINUTE) {
      start = now;
      count = 0;
    }
    const budget = Math.max(0, job.maximumPerMinute - count);
    const released = await this.store.release(job.jobId, budget);
    for (const t of released) this.touch(t);
    count += released.length;
    const waiting = await this.store.hasUnreleased(job.jobId);
    await this.store.setRolloutWindow(job.jobId, start, count, waiting ? start + MINUTE : null);
    return released.length;
  }

  /** A snapshot job is complete once no execution is left queued or in progress. */
  async maybeComplete(jobId: string, now: number): Promise<void> {
    const job = await this.store.job(jobId);
    if (!job || job.status !== "IN_PROGRESS" || job.targetSelection !== "SNAPSHOT") return;
    if (await this.store.hasOpen(jobId)) return;
    await this.store.completeJob(jobId, now);
  }

  /** AWS semantics without force: queued executions are canceled, running ones may finish. */
  async cancel(row: StoredJob, comment: string | undefined, now: number, reason: string): Promise<void> {
    const canceled = await this.store.cancelJob(row.jobId, comment ?? null, now);
    for (const c of canceled) if (c.released) this.touch(c.thingName);
    this.logger.info({ jobId: row.jobId, reason, canceled: canceled.length }, "thing job canceled");
  }

  /** AWS abortConfig: cancel the job once a failure type crosses its share of the executed things. */
  async checkAbort(jobId: string, now: number): Promise<void> {
    const job = await this.store.job(jobId);
    if (!job?.abortConfig || job.status !== "IN_PROGRESS") return;
    const counts = await this.store.statusCounts(jobId);
    const failed = counts.get("FAILED") ?? 0;
    const rejected = counts.get("REJECTED") ?? 0;
    const timedOut = counts.get("TIMED_OUT") ?? 0;
    const executed = (counts.get("SUCCEEDED") ?? 0) + failed + rejected + timedOut;
    const byType = { FAILED: failed, REJECTED: rejected, TIMED_OUT: timedOut, ALL: failed + rejected + timedOut };
    for (const c of job.abortConfig.criteriaList) {
      if (executed < c.minNumberOfExecutedThings || executed === 0) continue;
      if ((byType[c.failureType] * 100) / executed >= c.thresholdPercentage) {
        await this.cancel(job, `Aborted: ${c.failureType} reached ${c.thresholdPercentage}%`, now, "abortConfig");
        return;
      }
    }
  }
}
