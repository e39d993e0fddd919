import { randomUUID } from "node:crypto";
import type { EventBus } from "../bus/index.js";
import { ApiError, invalid, notFound } from "../errors/index.js";
import type { Logger } from "../observability/index.js";
import { isoNow } from "../store/index.js";
import type { ThingRegistry } from "../things/index.js";
import { ContinuousJobs } from "./continuous.js";
import type { JobDocuments } from "./documents.js";
import { MINUTE, Rollout } from "./rollout.js";
import type { StoredExecution, StoredJob, JobStore } from "./store.js";
import {
  TERMINAL,
  type ExecutionStatus,
  type JobExecution,
  type JobExecutionSummaryItem,
  type JobProcessDetails,
  type JobStatus,
  type NewJob,
  type TargetSelection,
  type Targets,
  type ThingJob,
  type ThingJobListItem,
} from "./types.js";

export const MAX_TARGETS = 100;

/** Who may be targeted: the caller must be able to read a thing's or group's domain. */
export interface TargetAccess {
  thing(domain: string): boolean;
  group(domain: string): boolean;
}

/** What the device side is told when a thing's pending executions change. */
export type PendingListener = (thingNames: ReadonlySet<string>) => void;

export interface ThingJobsOptions {
  store: JobStore;
  registry: ThingRegistry;
  bus: EventBus;
  documents: JobDocuments;
  clock: () => number;
  logger: Logger;
}

/**
 * Thing jobs and their executions, with their access rules and states. Every
 * change runs in one store transaction; the things whose pending list changed
 * are collected and handed to the device side after the commit, so devices
 * never hear of a state that is rolled back.
 */
export class ThingJobs {
  private readonly store: JobStore;
  private readonly registry: ThingRegistry;
  readonly documents: JobDocuments;
  private readonly clock: () => number;
  private readonly logger: Logger;
  private readonly rollout: Rollout;
  private readonly continuous: ContinuousJobs;
  private touched = new Set<string>();
  /** The change under way (`mutate`), which the next one waits for. */
  private changes: Promise<unknown> = Promise.resolve();
  private listeners: PendingListener[] = [];
  private readonly unsubscribe: (() => void)[];

  constructor(options: ThingJobsOptions) {
    this.store = options.store;
    this.registry = options.registry;
    this.documents = options.documents;
    this.clock = options.clock;
    this.logger = options.logger;
    const touch = (thingName: string): void => void this.touched.add(thingName);
    this.rollout = new Rollout(this.store, this.logger, touch);
    this.continuous = new ContinuousJobs(this.store, this.registry, this.rollout, touch);
    // `on`, not `follow`: these write executions to the shared database, which the process that
    // changed the registry does once for all.
    this.unsubscribe = [
      options.bus.on("thingGroup.membership", (e) =>
        this.guarded(e, () =>
          e.change === "added"
            ? this.continuous.thingAdded(e.groupId, e.thingName, this.clock())
            : this.continuous.thingRemoved(e.groupId, e.thingName, this.clock()),
        ),
      ),
      options.bus.on("thing.changed", (e) =>
        e.change === "deleted"
          ? this.guarded(e, () => this.continuous.thingDeleted(e.thingName, this.clock()))
          : undefined,
      ),
    ];
  }

  /**
   * Registry events must not fail the registry operation that emitted them: the change runs
   * after it (the job store begins its transaction in a turn of the event loop of its own, so
   * the registry's writes that follow the event never fall into it; see `SqliteJobStore`), and
   * its failure is logged. The registry waits for it (`EventBus.settled`) before it answers.
   */
  private guarded(event: object, change: () => Promise<void>): Promise<void> {
    return this.mutate(change).catch((err: unknown) =>
      this.logger.error({ err, event }, "thing jobs could not follow a registry change"),
    );
  }

  close(): void {
    for (const u of this.unsubscribe) u();
  }

  /** Registers who hears about things whose pending executions changed (the MQTT bridge). */
  onPendingChanged(listener: PendingListener): () => void {
    this.listeners.push(listener);
    return () => {
      this.listeners = this.listeners.filter((l) => l !== listener);
    };
  }

  now(): number {
    return this.clock();
  }

  /**
   * Runs `change` in a transaction, then tells listeners which things it touched.
   * One change at a time, so that what `touched` holds is the running change's only.
   */
  mutate<T>(change: () => Promise<T>): Promise<T> {
    const run = this.changes.then(async () => {
      const result = await this.store.transaction(change);
      this.flush();
      return result;
    });
    this.changes = run.catch(() => undefined);
    return run;
  }

  private flush(): void {
    if (this.touched.size === 0) return;
    const things = this.touched;
    this.touched = new Set();
    for (const listener of this.listeners) {
      try {
        listener(things);
      } catch (err) {
        this.logger.error({ err }, "pending-change listener failed");
      }
    }
  }

  // ---- jobs ----

  async create(input: NewJob, access: TargetAccess): Promise<ThingJob> {
    const things = unique(input.targets.things ?? []);
    const groupKeys = unique(input.targets.groups ?? []);
    if (things.length + groupKeys.length === 0) {
      throw new ApiError("PROPERTY_REQUIRED", "Property targets needs things or groups", "targets");
    }
    if (things.length + groupKeys.length > MAX_TARGETS) {
      throw invalid("targets", `at most ${MAX_TARGETS} things and groups together`);
    }
    const doc = await this.documents.document(input.jobDocumentId);
    if (!doc || doc.content === null) {
      throw notFound("FILE_NOT_FOUND", `Job document ${input.jobDocumentId}`, "jobDocumentId");
    }
    if (doc.domain !== input.domain) {
      throw invalid("domain", `the job document ${doc.documentId} belongs to domain ${doc.domain}`);
    }
    for (const name of things) {
      const thing = this.registry.thing(name);
      if (!thing || !access.thing(thing.domain)) throw notFound("THING_NOT_FOUND", `Thing ${name}`, "targets.things");
    }
    const groups = groupKeys.map((key) => {
      const group = this.registry.group(key);
      if (!group || !access.group(group.domain)) {
        throw notFound("THING_GROUP_NOT_FOUND", `Thing group ${key}`, "targets.groups");
      }
      return group;
    });
    const jobId = randomUUID();
    const now = this.clock();
    await this.mutate(async () => {
      await this.store.insertJob({
        jobId,
        domain: input.domain,
        description: input.description,
        targetSelection: input.targetSelection,
        documentId: doc.documentId,
        targetThings: things,
        createdAt: now,
        maximumPerMinute: input.maximumPerMinute ?? null,
        inProgressTimeoutMinutes: input.timeoutConfig?.inProgressTimeoutInMinutes ?? null,
        abortConfig: input.abortConfig ?? null,
      });
      await this.store.addGroups(jobId, groups, 0);
      const members = new Set(things);
      for (const g of groups) for (const t of g.things) members.add(t);
      for (const thingName of members) await this.store.queue(jobId, thingName, 1, now);
      await this.rollout.release((await this.jobRow(jobId))!, now);
      await this.rollout.maybeComplete(jobId, now);
    });
    return this.describe(jobId);
  }

  jobRow(jobId: string): Promise<StoredJob | undefined> {
    return this.store.job(jobId);
  }

  async requireJob(jobId: string): Promise<StoredJob> {
    const row = await this.jobRow(jobId);
    if (!row) throw notFound("THING_JOB_NOT_FOUND", `Thing job ${jobId}`, "jobId");
    return row;
  }

  async describe(jobId: string): Promise<ThingJob> {
    const row = await this.requireJob(jobId);
    const targets = await this.targetsOf(row);
    const job: ThingJob = {
      jobId: row.jobId,
      domain: row.domain,
      description: row.description,
      status: row.status,
      targetSelection: row.targetSelection,
      createdAt: isoNow(row.createdAt),
      lastUpdatedAt: isoNow(row.lastUpdatedAt),
      targets,
      jobProcessDetails: await this.processDetails(row, targets),
      jobDocumentId: row.documentId,
    };
    if (row.comment !== null) job.comment = row.comment;
    if (row.completedAt !== null) job.completedAt = isoNow(row.completedAt);
    if (row.canceledAt !== null) job.canceledAt = isoNow(row.canceledAt);
    if (row.maximumPerMinute !== null) job.maximumPerMinute = row.maximumPerMinute;
    if (row.inProgressTimeoutMinutes !== null) {
      job.timeoutConfig = { inProgressTimeoutInMinutes: row.inProgressTimeoutMinutes };
    }
    if (row.abortConfig) job.abortConfig = row.abortConfig;
    return job;
  }

  async list(
    domains: ReadonlySet<string>,
    filter: {
      status?: JobStatus | undefined;
      groupId?: string | undefined;
      targetSelection?: TargetSelection | undefined;
    },
  ): Promise<ThingJobListItem[]> {
    const rows = await this.store.jobs({
      status: filter.status ?? null,
      targetSelection: filter.targetSelection ?? null,
      groupId: filter.groupId ?? null,
    });
    return rows
      .filter((r) => domains.has(r.domain))
      .map((r) => {
        const item: ThingJobListItem = {
          jobId: r.jobId,
          status: r.status,
          targetSelection: r.targetSelection,
          lastUpdatedAt: isoNow(r.lastUpdatedAt),
        };
        if (r.completedAt !== null) item.completedAt = isoNow(r.completedAt);
        if (r.canceledAt !== null) item.canceledAt = isoNow(r.canceledAt);
        return item;
      });
  }

  async cancel(jobId: string, comment: string | undefined, reason = "canceled"): Promise<void> {
    const row = await this.requireJob(jobId);
    if (row.status === "COMPLETED") {
      throw new ApiError("INVALID_ACTION", `Thing job ${jobId} is already COMPLETED`, undefined, 409);
    }
    if (row.status === "CANCELED") return;
    await this.mutate(() => this.rollout.cancel(row, comment, this.clock(), reason));
  }

  async associate(
    jobId: string,
    groupKeys: string[],
    comment: string | undefined,
    canReadGroup: (d: string) => boolean,
  ): Promise<void> {
    const row = await this.requireJob(jobId);
    if (row.targetSelection !== "CONTINUOUS") {
      throw invalid("jobId", "targets can be associated with CONTINUOUS jobs only");
    }
    if (row.status !== "IN_PROGRESS") throw invalid("jobId", `the job is ${row.status}`);
    const groups = unique(groupKeys).map((key) => {
      const group = this.registry.group(key);
      if (!group || !canReadGroup(group.domain)) {
        throw notFound("THING_GROUP_NOT_FOUND", `Thing group ${key}`, "targets");
      }
      return group;
    });
    const current = await this.targetsOf(row);
    const known = new Set(await this.store.groupIds(jobId));
    const fresh = groups.filter((g) => !known.has(g.id));
    if (current.things.length + current.groups.length + fresh.length > MAX_TARGETS) {
      throw invalid("targets", `a job has at most ${MAX_TARGETS} things and groups together`);
    }
    const now = this.clock();
    await this.mutate(async () => {
      await this.store.addGroups(jobId, fresh, known.size);
      for (const g of fresh) for (const t of g.things) await this.continuous.startFor(jobId, t, now);
      await this.store.touchJob(jobId, comment ?? null, now);
      await this.rollout.release((await this.jobRow(jobId))!, now);
    });
  }

  async delete(jobId: string, force: boolean): Promise<void> {
    const row = await this.requireJob(jobId);
    if (row.status === "IN_PROGRESS" && !force) {
      throw new ApiError(
        "INVALID_ACTION",
        `Thing job ${jobId} is IN_PROGRESS; delete it with force=true or cancel it first`,
        undefined,
        409,
      );
    }
    await this.mutate(async () => {
      for (const thingName of await this.store.deleteJob(jobId)) this.touched.add(thingName);
    });
  }

  async documentOf(jobId: string): Promise<unknown> {
    const row = await this.requireJob(jobId);
    const doc = await this.documents.document(row.documentId);
    return doc?.content ? JSON.parse(doc.content) : {};
  }

  // ---- executions ----

  async executions(jobId: string, status: ExecutionStatus | undefined): Promise<JobExecutionSummaryItem[]> {
    await this.requireJob(jobId);
    return (await this.store.executions(jobId, status ?? null)).map((r) => {
      const summary: JobExecutionSummaryItem["jobExecutionSummary"] = {
        status: r.status,
        queuedAt: r.queuedAt,
        lastUpdatedAt: r.lastUpdatedAt,
        executionNumber: String(r.executionNumber),
      };
      if (r.startedAt !== null) summary.startedAt = r.startedAt;
      return { jobId: r.jobId, thingName: r.thingName, jobExecutionSummary: summary };
    });
  }

  /** The execution with `executionNumber`, or the thing's latest one. */
  executionRow(jobId: string, thingName: string, executionNumber?: number): Promise<StoredExecution | undefined> {
    return this.store.execution(jobId, thingName, executionNumber);
  }

  async execution(jobId: string, thingName: string, executionNumber?: number): Promise<JobExecution> {
    await this.requireJob(jobId);
    const row = await this.executionRow(jobId, thingName, executionNumber);
    if (!row) throw executionNotFound(jobId, thingName, executionNumber);
    return this.toExecution(row);
  }

  toExecution(row: StoredExecution): JobExecution {
    const execution: JobExecution = {
      jobId: row.jobId,
      thingName: row.thingName,
      status: row.status,
      queuedAt: row.queuedAt,
      lastUpdatedAt: row.lastUpdatedAt,
      executionNumber: String(row.executionNumber),
      versionNumber: row.versionNumber,
      forceCanceled: row.forceCanceled,
    };
    if (row.startedAt !== null) execution.startedAt = row.startedAt;
    if (row.statusDetails !== null) execution.statusDetails = row.statusDetails;
    if (row.status === "IN_PROGRESS" && row.timeoutAt !== null) {
      execution.approximateSecondsBeforeTimedOut = Math.max(0, Math.ceil((row.timeoutAt - this.clock()) / 1000));
    }
    return execution;
  }

  async cancelExecution(
    jobId: string,
    thingName: string,
    force: boolean,
    expectedVersion: number | undefined,
  ): Promise<void> {
    await this.requireJob(jobId);
    const row = await this.executionRow(jobId, thingName);
    if (!row) throw executionNotFound(jobId, thingName);
    if (expectedVersion !== undefined && expectedVersion !== row.versionNumber) {
      throw new ApiError(
        "INVALID_ACTION",
        `Version mismatch: the execution is at version ${row.versionNumber}`,
        "expectedVersion",
        409,
      );
    }
    if (TERMINAL.has(row.status)) {
      throw new ApiError("INVALID_ACTION", `The execution is already ${row.status}`, undefined, 409);
    }
    if (row.status === "IN_PROGRESS" && !force) {
      throw new ApiError("INVALID_ACTION", "The execution is IN_PROGRESS; cancel it with force=true", "force", 409);
    }
    const now = this.clock();
    await this.mutate(async () => {
      await this.store.cancelExecution(row, force, now);
      if (row.released) this.touched.add(thingName);
      await this.rollout.maybeComplete(jobId, now);
    });
  }

  async deleteExecution(jobId: string, thingName: string, executionNumber: number, force: boolean): Promise<void> {
    await this.requireJob(jobId);
    const row = await this.executionRow(jobId, thingName, executionNumber);
    if (!row) throw executionNotFound(jobId, thingName, executionNumber);
    if (row.status === "IN_PROGRESS" && !force) {
      throw new ApiError("INVALID_ACTION", "The execution is IN_PROGRESS; delete it with force=true", "force", 409);
    }
    await this.mutate(async () => {
      await this.store.deleteExecution(row);
      if (row.released && !TERMINAL.has(row.status)) this.touched.add(thingName);
      await this.rollout.maybeComplete(jobId, this.clock());
    });
  }

  // ---- execution state changes (device side and timers) ----

  /** Moves an execution inside a `mutate`; the caller has checked that the transition is allowed. */
  async transition(
    row: StoredExecution,
    status: ExecutionStatus,
    now: number,
    change: {
      statusDetails?: Record<string, string> | undefined;
      stepTimeoutInMinutes?: number | undefined;
      byDevice: boolean;
    },
  ): Promise<StoredExecution> {
    let startedAt = row.startedAt;
    let inProgressDeadline = row.inProgressDeadline;
    let stepDeadline = row.stepDeadline;
    if (status === "IN_PROGRESS" && row.status === "QUEUED") {
      startedAt = now;
      const minutes = (await this.jobRow(row.jobId))?.inProgressTimeoutMinutes;
      inProgressDeadline = minutes ? now + minutes * MINUTE : null;
    }
    if (change.stepTimeoutInMinutes !== undefined) stepDeadline = now + change.stepTimeoutInMinutes * MINUTE;
    const timeoutAt = status === "IN_PROGRESS" ? minOf(inProgressDeadline, stepDeadline) : null;
    const details = change.statusDetails ?? row.statusDetails;
    const version = row.versionNumber + (change.byDevice ? 1 : 0);
    await this.store.updateExecution(row, {
      status,
      startedAt,
      lastUpdatedAt: now,
      versionNumber: version,
      statusDetails: details,
      inProgressDeadline,
      stepDeadline: stepDeadline,
      timeoutAt: timeoutAt,
    });
    if (status !== row.status) this.touched.add(row.thingName);
    if (TERMINAL.has(status)) {
      await this.rollout.checkAbort(row.jobId, now);
      await this.rollout.maybeComplete(row.jobId, now);
    }
    return (await this.executionRow(row.jobId, row.thingName, row.executionNumber))!;
  }

  /** Released executions a device may act on, running ones first, then by queue time. */
  pending(thingName: string): Promise<StoredExecution[]> {
    return this.store.pending(thingName);
  }

  // ---- timers ----

  /** The earliest moment a timer is due, for the scheduler to sleep until. */
  nextDue(): Promise<number | undefined> {
    return this.store.nextDue();
  }

  /** Runs every timer due at the clock's now: rollout windows and execution timeouts. Returns how many fired. */
  runDue(): Promise<number> {
    const now = this.clock();
    return this.mutate(async () => {
      let fired = 0;
      for (const job of await this.store.dueRollouts(now)) fired += await this.rollout.release(job, now);
      for (const row of await this.store.lateExecutions(now)) {
        await this.transition(row, "TIMED_OUT", now, { byDevice: false });
        fired++;
      }
      return fired;
    });
  }

  // ---- internals ----

  private async processDetails(row: StoredJob, targets: Targets): Promise<JobProcessDetails> {
    const c = await this.store.statusCounts(row.jobId);
    const n = (s: ExecutionStatus): number => c.get(s) ?? 0;
    return {
      numberOfCanceledThings: n("CANCELED"),
      numberOfFailedThings: n("FAILED"),
      numberOfInProgressThings: n("IN_PROGRESS"),
      numberOfQueuedThings: n("QUEUED"),
      numberOfRejectedThings: n("REJECTED"),
      numberOfRemovedThings: n("REMOVED"),
      numberOfSucceededThings: n("SUCCEEDED"),
      numberOfTimedOutThings: n("TIMED_OUT"),
      // Targets are still being processed while a job runs; a finished job processes none.
      processingTargets: row.status === "IN_PROGRESS" ? targets : { groups: [], things: [] },
    };
  }

  private async targetsOf(row: StoredJob): Promise<Targets> {
    return { groups: await this.store.groupNames(row.jobId), things: row.targetThings };
  }
}

function executionNotFound(jobId: string, thingName: string, executionNumber?: number): ApiError {
  const which = executionNumber === undefined ? "" : ` number ${executionNumber}`;
  return new ApiError(
    "THING_JOB_NOT_FOUND",
    `Execution${which} of thing job ${jobId} on thing ${thingName} not found`,
    executionNumber === undefined ? "thingName" : "executionNumber",
  );
}

function unique(values: string[]): string[] {
  return [...new Set(values)];
}

function minOf(a: number | null, b: number | null): number | null {
  if (a === null) return b;
  if (b === null) return a;
  return Math.min(a, b);
}
