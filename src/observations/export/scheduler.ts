import { randomUUID } from "node:crypto";
import type { Logger } from "../../observability/index.js";
import { parseCron } from "./cron.js";
import type { ExportRunner } from "./runner.js";
import { timePeriodMs, type ExportService } from "./service.js";
import type { ExportStore } from "./store.js";

/**
 * Fires scheduled export jobs. Each job keeps its next fire time in the
 * store, so a fire missed while the service was down is found on start and
 * runs once, for the window that ends at the latest missed fire time.
 *
 * Every process with the scheduler role runs one; they share the store, and
 * only the one holding the store's schedule lease fires. It renews the lease
 * each tick; when it dies another takes over once the lease expires. Each
 * tick also hands its runner the executions no runner holds any more (a dead
 * process's), so that they run without waiting for a process to start.
 */
export class ExportScheduler {
  readonly name = "export-scheduler";
  /** This scheduler's name on the schedule lease. */
  readonly holder = randomUUID();
  private timer: NodeJS.Timeout | undefined;
  /** The tick under way: the next one waits its turn rather than firing a job twice. */
  private ticking: Promise<number> | undefined;

  constructor(
    private readonly deps: {
      store: ExportStore;
      service: ExportService;
      runner: ExportRunner;
      clock: () => number;
      logger: Logger;
      tickMs?: number;
      /** How long the schedule lease lasts unless renewed (ms): how long schedules wait when its holder dies. */
      leaseMs?: number;
    },
  ) {}

  private get leaseMs(): number {
    return this.deps.leaseMs ?? Math.max(10_000, 3 * (this.deps.tickMs ?? 1000));
  }

  async start(): Promise<void> {
    await this.tick();
    this.timer = setInterval(() => {
      if (this.ticking) return;
      this.tick().catch((err: unknown) => this.deps.logger.error({ err }, "export schedules could not be read"));
    }, this.deps.tickMs ?? 1000);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.ticking?.catch(() => 0);
    // Renewed for no time: expired at once, so another process's scheduler takes over on its next tick.
    await this.deps.store.holdScheduleLease(this.holder, this.deps.clock(), 0);
  }

  /** Submits an execution for every due job; answers how many. A tick asked for while one runs waits for it. */
  async tick(): Promise<number> {
    while (this.ticking) await this.ticking.catch(() => 0);
    this.ticking = this.fire();
    try {
      return await this.ticking;
    } finally {
      this.ticking = undefined;
    }
  }

  private async fire(): Promise<number> {
    await this.deps.runner.resume();
    const now = this.deps.clock();
    if (!(await this.deps.store.holdScheduleLease(this.holder, now, this.leaseMs))) return 0;
    let fired = 0;
    for (const { job, owner, nextFire } of await this.deps.store.dueJobs(now)) {
      try {
        const cron = parseCron(job.schedule!);
        let fire = nextFire!;
        // Several missed fires run once: the latest one.
        for (let n = cron.next(fire); n !== undefined && n <= now; n = cron.next(fire)) fire = n;
        await this.deps.store.setNextFire(job.id, cron.next(Math.max(fire, now)) ?? null);
        await this.deps.service.submit(job, owner, fire - timePeriodMs(job.timePeriod!), fire);
        fired++;
      } catch (err) {
        this.deps.logger.error({ err, jobId: job.id }, "scheduled export could not be submitted");
        await this.deps.store.setNextFire(job.id, null);
      }
    }
    return fired;
  }
}
