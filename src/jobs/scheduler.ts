import type { Logger } from "../observability/index.js";
import type { ThingJobs } from "./jobs.js";

/**
 * Drives the jobs' timers (rollout windows, in-progress and step timeouts).
 * Due times live in the store and are compared with the injected clock, so a
 * restart resumes them and tests move time by moving the clock; the poll
 * interval only bounds how late a timer fires (the interface allows 60 s).
 */
export class JobScheduler {
  readonly name = "jobs-scheduler";
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly jobs: ThingJobs,
    private readonly logger: Logger,
    private readonly pollMs = 1000,
  ) {}

  async start(): Promise<void> {
    await this.tick();
    this.timer = setInterval(() => void this.tick(), this.pollMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Runs what is due now; resolves how many timers fired. */
  async tick(): Promise<number> {
    try {
      const due = await this.jobs.nextDue();
      if (due === undefined || due > this.jobs.now()) return 0;
      return await this.jobs.runDue();
    } catch (err) {
      this.logger.error({ err }, "job timers failed");
      return 0;
    }
  }
}
