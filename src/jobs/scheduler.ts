import type { Logger } from "../observability/index.js";
import type { ThingJobs } from "./jobs.js";

/**
 * Drives the jobs' timers (rollout windows, in-progress and step timeouts).
 * Due times live in SQLite and are compared with the injected clock, so a
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
    this.tick();
    this.timer = setInterval(() => this.tick(), this.pollMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Runs what is due now; returns how many timers fired. */
  tick(): number {
    try {
      const due = this.jobs.nextDue();
      if (due === undefined || due > this.jobs.now()) return 0;
      return this.jobs.runDue();
    } catch (err) {
      this.logger.error({ err }, "job timers failed");
      return 0;
    }
  }
}
