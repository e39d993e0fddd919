import type { Logger } from "../../observability/index.js";
import { parseCron } from "./cron.js";
import type { ExportRunner } from "./runner.js";
import { timePeriodMs, type ExportService } from "./service.js";
import type { ExportStore } from "./store.js";

/**
 * Fires scheduled export jobs. Each job keeps its next fire time in the
 * store, so a fire missed while the service was down is found on start and
 * runs once, for the window that ends at the latest missed fire time.
 */
export class ExportScheduler {
  readonly name = "export-scheduler";
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
    },
  ) {}

  async start(): Promise<void> {
    await this.deps.runner.resume();
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
    const now = this.deps.clock();
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
