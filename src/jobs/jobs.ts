import { randomUUID } from "node:crypto";
import type { Statement } from "better-sqlite3";
import type { EventBus } from "../bus/index.js";
import { ApiError, invalid, notFound } from "../errors/index.js";
import type { Logger } from "../observability/index.js";
import { isoNow, type Db } from "../store/index.js";
import type { ThingRegistry } from "../things/index.js";
import type { JobDocuments } from "./documents.js";
import {
  TERMINAL,
  type AbortConfig,
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
const MINUTE = 60_000;

export interface JobRow {
  job_id: string;
  domain: string;
  description: string;
  comment: string | null;
  status: JobStatus;
  target_selection: TargetSelection;
  document_id: string;
  target_things: string;
  created_at: string;
  last_updated_at: string;
  completed_at: string | null;
  canceled_at: string | null;
  maximum_per_minute: number | null;
  in_progress_timeout_minutes: number | null;
  abort_config: string | null;
  rollout_window_start: number;
  rollout_window_count: number;
  rollout_next_at: number | null;
}

export interface ExecutionRow {
  job_id: string;
  thing_name: string;
  execution_number: number;
  status: ExecutionStatus;
  released: number;
  queued_at: number;
  started_at: number | null;
  last_updated_at: number;
  version_number: number;
  status_details: string | null;
  force_canceled: number;
  in_progress_deadline: number | null;
  step_deadline: number | null;
  timeout_at: number | null;
}

/** Who may be targeted: the caller must be able to read a thing's or group's domain. */
export interface TargetAccess {
  thing(domain: string): boolean;
  group(domain: string): boolean;
}

/** What the device side is told when a thing's pending executions change. */
export type PendingListener = (thingNames: ReadonlySet<string>) => void;

export interface ThingJobsOptions {
  db: Db;
  registry: ThingRegistry;
  bus: EventBus;
  documents: JobDocuments;
  clock: () => number;
  logger: Logger;
}

/**
 * Thing jobs and their executions. Every change runs in one SQLite
 * transaction; the things whose pending list changed are collected and
 * handed to the device side after the commit, so devices never hear of a
 * state that is rolled back.
 */
export class ThingJobs {
  private readonly db: Db;
  private readonly registry: ThingRegistry;
  readonly documents: JobDocuments;
  private readonly clock: () => number;
  private readonly logger: Logger;
  private touched = new Set<string>();
  private readonly statements = new Map<string, unknown>();
  private listeners: PendingListener[] = [];
  private readonly unsubscribe: (() => void)[];

  constructor(options: ThingJobsOptions) {
    this.db = options.db;
    this.registry = options.registry;
    this.documents = options.documents;
    this.clock = options.clock;
    this.logger = options.logger;
    // `on`, not `follow`: these write executions to the shared database, which the process that
    // changed the registry does once for all.
    this.unsubscribe = [
      options.bus.on("thingGroup.membership", (e) =>
        this.guarded(e, () => (e.change === "added" ? this.thingAdded(e.groupId, e.thingName) : this.thingRemoved(e))),
      ),
      options.bus.on("thing.changed", (e) => {
        if (e.change === "deleted") this.guarded(e, () => this.thingDeleted(e.thingName));
      }),
    ];
  }

  /** Registry events must not fail the registry operation that emitted them. */
  private guarded(event: object, change: () => void): void {
    try {
      this.mutate(change);
    } catch (err) {
      this.logger.error({ err, event }, "thing jobs could not follow a registry change");
    }
  }

  /** A prepared statement, prepared once per SQL text: the device path runs a few per message. */
  private q<P extends unknown[] | object = unknown[], R = unknown>(sql: string): Statement<P, R> {
    let statement = this.statements.get(sql) as Statement<P, R> | undefined;
    if (!statement) {
      statement = this.db.prepare<P, R>(sql);
      this.statements.set(sql, statement);
    }
    return statement;
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

  /** Runs `change` in a transaction, then tells listeners which things it touched. */
  mutate<T>(change: () => T): T {
    const result = this.db.transaction(change)();
    this.flush();
    return result;
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

  create(input: NewJob, access: TargetAccess): ThingJob {
    const things = unique(input.targets.things ?? []);
    const groupKeys = unique(input.targets.groups ?? []);
    if (things.length + groupKeys.length === 0) {
      throw new ApiError("PROPERTY_REQUIRED", "Property targets needs things or groups", "targets");
    }
    if (things.length + groupKeys.length > MAX_TARGETS) {
      throw invalid("targets", `at most ${MAX_TARGETS} things and groups together`);
    }
    const doc = this.documents.document(input.jobDocumentId);
    if (!doc || doc.content === null) {
      throw notFound("FILE_NOT_FOUND", `Job document ${input.jobDocumentId}`, "jobDocumentId");
    }
    if (doc.domain !== input.domain) {
      throw invalid("domain", `the job document ${doc.document_id} belongs to domain ${doc.domain}`);
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
    this.mutate(() => {
      this.q(
        `INSERT INTO thing_jobs (job_id, domain, description, status, target_selection, document_id, target_things,
             created_at, last_updated_at, maximum_per_minute, in_progress_timeout_minutes, abort_config)
           VALUES (?, ?, ?, 'IN_PROGRESS', ?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(
        jobId,
        input.domain,
        input.description,
        input.targetSelection,
        doc.document_id,
        JSON.stringify(things),
        isoNow(now),
        isoNow(now),
        input.maximumPerMinute ?? null,
        input.timeoutConfig?.inProgressTimeoutInMinutes ?? null,
        input.abortConfig ? JSON.stringify(input.abortConfig) : null,
      );
      const addGroup = this.q(
        "INSERT OR IGNORE INTO thing_job_groups (job_id, group_id, group_name, position) VALUES (?, ?, ?, ?)",
      );
      groups.forEach((g, i) => addGroup.run(jobId, g.id, g.name, i));
      const members = new Set(things);
      for (const g of groups) for (const t of g.things) members.add(t);
      for (const thingName of members) this.queue(jobId, thingName, 1, now);
      this.release(this.jobRow(jobId)!, now);
      this.maybeComplete(jobId, now);
    });
    return this.describe(jobId);
  }

  jobRow(jobId: string): JobRow | undefined {
    return this.q<[string], JobRow>("SELECT * FROM thing_jobs WHERE job_id = ?").get(jobId);
  }

  requireJob(jobId: string): JobRow {
    const row = this.jobRow(jobId);
    if (!row) throw notFound("THING_JOB_NOT_FOUND", `Thing job ${jobId}`, "jobId");
    return row;
  }

  describe(jobId: string): ThingJob {
    const row = this.requireJob(jobId);
    const targets = this.targetsOf(row);
    const job: ThingJob = {
      jobId: row.job_id,
      domain: row.domain,
      description: row.description,
      status: row.status,
      targetSelection: row.target_selection,
      createdAt: row.created_at,
      lastUpdatedAt: row.last_updated_at,
      targets,
      jobProcessDetails: this.processDetails(row, targets),
      jobDocumentId: row.document_id,
    };
    if (row.comment !== null) job.comment = row.comment;
    if (row.completed_at) job.completedAt = row.completed_at;
    if (row.canceled_at) job.canceledAt = row.canceled_at;
    if (row.maximum_per_minute !== null) job.maximumPerMinute = row.maximum_per_minute;
    if (row.in_progress_timeout_minutes !== null) {
      job.timeoutConfig = { inProgressTimeoutInMinutes: row.in_progress_timeout_minutes };
    }
    if (row.abort_config) job.abortConfig = JSON.parse(row.abort_config) as AbortConfig;
    return job;
  }

  list(
    domains: ReadonlySet<string>,
    filter: {
      status?: JobStatus | undefined;
      groupId?: string | undefined;
      targetSelection?: TargetSelection | undefined;
    },
  ): ThingJobListItem[] {
    const rows = this.q<[{ status: string | null; sel: string | null; group: string | null }], JobRow>(
      `SELECT * FROM thing_jobs j
         WHERE (@status IS NULL OR status = @status) AND (@sel IS NULL OR target_selection = @sel)
           AND (@group IS NULL OR EXISTS (SELECT 1 FROM thing_job_groups g WHERE g.job_id = j.job_id AND g.group_id = @group))
         ORDER BY created_at DESC, job_id`,
    ).all({ status: filter.status ?? null, sel: filter.targetSelection ?? null, group: filter.groupId ?? null });
    return rows
      .filter((r) => domains.has(r.domain))
      .map((r) => {
        const item: ThingJobListItem = {
          jobId: r.job_id,
          status: r.status,
          targetSelection: r.target_selection,
          lastUpdatedAt: r.last_updated_at,
        };
        if (r.completed_at) item.completedAt = r.completed_at;
        if (r.canceled_at) item.canceledAt = r.canceled_at;
        return item;
      });
  }

  cancel(jobId: string, comment: string | undefined, reason = "canceled"): void {
    const row = this.requireJob(jobId);
    if (row.status === "COMPLETED") {
      throw new ApiError("INVALID_ACTION", `Thing job ${jobId} is already COMPLETED`, undefined, 409);
    }
    if (row.status === "CANCELED") return;
    this.mutate(() => this.cancelJob(row, comment, this.clock(), reason));
  }

  /** AWS semantics without force: queued executions are canceled, running ones may finish. */
  private cancelJob(row: JobRow, comment: string | undefined, now: number, reason: string): void {
    this.q(
      `UPDATE thing_jobs SET status = 'CANCELED', canceled_at = ?, last_updated_at = ?, comment = COALESCE(?, comment),
           rollout_next_at = NULL WHERE job_id = ?`,
    ).run(isoNow(now), isoNow(now), comment ?? null, row.job_id);
    const canceled = this.q<[number, string], { thing_name: string; released: number }>(
      `UPDATE job_executions SET status = 'CANCELED', last_updated_at = ?, timeout_at = NULL
         WHERE job_id = ? AND status = 'QUEUED' RETURNING thing_name, released`,
    ).all(now, row.job_id);
    for (const c of canceled) if (c.released) this.touched.add(c.thing_name);
    this.logger.info({ jobId: row.job_id, reason, canceled: canceled.length }, "thing job canceled");
  }

  associate(
    jobId: string,
    groupKeys: string[],
    comment: string | undefined,
    canReadGroup: (d: string) => boolean,
  ): void {
    const row = this.requireJob(jobId);
    if (row.target_selection !== "CONTINUOUS") {
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
    const current = this.targetsOf(row);
    const known = new Set(this.groupIds(jobId));
    const fresh = groups.filter((g) => !known.has(g.id));
    if (current.things.length + current.groups.length + fresh.length > MAX_TARGETS) {
      throw invalid("targets", `a job has at most ${MAX_TARGETS} things and groups together`);
    }
    const now = this.clock();
    this.mutate(() => {
      const add = this.q("INSERT INTO thing_job_groups (job_id, group_id, group_name, position) VALUES (?, ?, ?, ?)");
      fresh.forEach((g, i) => add.run(jobId, g.id, g.name, known.size + i));
      for (const g of fresh) for (const t of g.things) this.startFor(jobId, t, now);
      this.q("UPDATE thing_jobs SET comment = COALESCE(?, comment), last_updated_at = ? WHERE job_id = ?").run(
        comment ?? null,
        isoNow(now),
        jobId,
      );
      this.release(this.jobRow(jobId)!, now);
    });
  }

  delete(jobId: string, force: boolean): void {
    const row = this.requireJob(jobId);
    if (row.status === "IN_PROGRESS" && !force) {
      throw new ApiError(
        "INVALID_ACTION",
        `Thing job ${jobId} is IN_PROGRESS; delete it with force=true or cancel it first`,
        undefined,
        409,
      );
    }
    this.mutate(() => {
      const pending = this.q<[string], { thing_name: string }>(
        "SELECT thing_name FROM job_executions WHERE job_id = ? AND released = 1 AND status IN ('QUEUED', 'IN_PROGRESS')",
      ).all(jobId);
      for (const p of pending) this.touched.add(p.thing_name);
      this.q("DELETE FROM thing_jobs WHERE job_id = ?").run(jobId);
    });
  }

  documentOf(jobId: string): unknown {
    const row = this.requireJob(jobId);
    const doc = this.documents.document(row.document_id);
    return doc?.content ? JSON.parse(doc.content) : {};
  }

  // ---- executions ----

  executions(jobId: string, status: ExecutionStatus | undefined): JobExecutionSummaryItem[] {
    this.requireJob(jobId);
    return this.q<[{ job: string; status: string | null }], ExecutionRow>(
      `SELECT * FROM job_executions WHERE job_id = @job AND (@status IS NULL OR status = @status)
         ORDER BY thing_name, execution_number`,
    )
      .all({ job: jobId, status: status ?? null })
      .map((r) => {
        const summary: JobExecutionSummaryItem["jobExecutionSummary"] = {
          status: r.status,
          queuedAt: r.queued_at,
          lastUpdatedAt: r.last_updated_at,
          executionNumber: String(r.execution_number),
        };
        if (r.started_at !== null) summary.startedAt = r.started_at;
        return { jobId: r.job_id, thingName: r.thing_name, jobExecutionSummary: summary };
      });
  }

  /** The execution with `executionNumber`, or the thing's latest one. */
  executionRow(jobId: string, thingName: string, executionNumber?: number): ExecutionRow | undefined {
    return executionNumber === undefined
      ? this.q<[string, string], ExecutionRow>(
          `SELECT * FROM job_executions WHERE job_id = ? AND thing_name = ?
             ORDER BY execution_number DESC LIMIT 1`,
        ).get(jobId, thingName)
      : this.q<[string, string, number], ExecutionRow>(
          "SELECT * FROM job_executions WHERE job_id = ? AND thing_name = ? AND execution_number = ?",
        ).get(jobId, thingName, executionNumber);
  }

  execution(jobId: string, thingName: string, executionNumber?: number): JobExecution {
    this.requireJob(jobId);
    const row = this.executionRow(jobId, thingName, executionNumber);
    if (!row) throw executionNotFound(jobId, thingName, executionNumber);
    return this.toExecution(row);
  }

  toExecution(row: ExecutionRow): JobExecution {
    const execution: JobExecution = {
      jobId: row.job_id,
      thingName: row.thing_name,
      status: row.status,
      queuedAt: row.queued_at,
      lastUpdatedAt: row.last_updated_at,
      executionNumber: String(row.execution_number),
      versionNumber: row.version_number,
      forceCanceled: row.force_canceled === 1,
    };
    if (row.started_at !== null) execution.startedAt = row.started_at;
    if (row.status_details !== null) execution.statusDetails = JSON.parse(row.status_details) as Record<string, string>;
    if (row.status === "IN_PROGRESS" && row.timeout_at !== null) {
      execution.approximateSecondsBeforeTimedOut = Math.max(0, Math.ceil((row.timeout_at - this.clock()) / 1000));
    }
    return execution;
  }

  cancelExecution(jobId: string, thingName: string, force: boolean, expectedVersion: number | undefined): void {
    this.requireJob(jobId);
    const row = this.executionRow(jobId, thingName);
    if (!row) throw executionNotFound(jobId, thingName);
    if (expectedVersion !== undefined && expectedVersion !== row.version_number) {
      throw new ApiError(
        "INVALID_ACTION",
        `Version mismatch: the execution is at version ${row.version_number}`,
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
    this.mutate(() => {
      this.q(
        `UPDATE job_executions SET status = 'CANCELED', force_canceled = ?, last_updated_at = ?, timeout_at = NULL
           WHERE job_id = ? AND thing_name = ? AND execution_number = ?`,
      ).run(force ? 1 : 0, now, jobId, thingName, row.execution_number);
      if (row.released) this.touched.add(thingName);
      this.maybeComplete(jobId, now);
    });
  }

  deleteExecution(jobId: string, thingName: string, executionNumber: number, force: boolean): void {
    this.requireJob(jobId);
    const row = this.executionRow(jobId, thingName, executionNumber);
    if (!row) throw executionNotFound(jobId, thingName, executionNumber);
    if (row.status === "IN_PROGRESS" && !force) {
      throw new ApiError("INVALID_ACTION", "The execution is IN_PROGRESS; delete it with force=true", "force", 409);
    }
    this.mutate(() => {
      this.q("DELETE FROM job_executions WHERE job_id = ? AND thing_name = ? AND execution_number = ?").run(
        jobId,
        thingName,
        executionNumber,
      );
      if (row.released && !TERMINAL.has(row.status)) this.touched.add(thingName);
      this.maybeComplete(jobId, this.clock());
    });
  }

  // ---- execution state changes (device side and timers) ----

  /** Moves an execution; the caller has checked that the transition is allowed. */
  transition(
    row: ExecutionRow,
    status: ExecutionStatus,
    now: number,
    change: {
      statusDetails?: Record<string, string> | undefined;
      stepTimeoutInMinutes?: number | undefined;
      byDevice: boolean;
    },
  ): ExecutionRow {
    let startedAt = row.started_at;
    let inProgressDeadline = row.in_progress_deadline;
    let stepDeadline = row.step_deadline;
    if (status === "IN_PROGRESS" && row.status === "QUEUED") {
      startedAt = now;
      const minutes = this.jobRow(row.job_id)?.in_progress_timeout_minutes;
      inProgressDeadline = minutes ? now + minutes * MINUTE : null;
    }
    if (change.stepTimeoutInMinutes !== undefined) stepDeadline = now + change.stepTimeoutInMinutes * MINUTE;
    const timeoutAt = status === "IN_PROGRESS" ? minOf(inProgressDeadline, stepDeadline) : null;
    const details = change.statusDetails ? JSON.stringify(change.statusDetails) : row.status_details;
    const version = row.version_number + (change.byDevice ? 1 : 0);
    this.q(
      `UPDATE job_executions SET status = ?, started_at = ?, last_updated_at = ?, version_number = ?, status_details = ?,
           in_progress_deadline = ?, step_deadline = ?, timeout_at = ?
         WHERE job_id = ? AND thing_name = ? AND execution_number = ?`,
    ).run(
      status,
      startedAt,
      now,
      version,
      details,
      inProgressDeadline,
      stepDeadline,
      timeoutAt,
      row.job_id,
      row.thing_name,
      row.execution_number,
    );
    if (status !== row.status) this.touched.add(row.thing_name);
    if (TERMINAL.has(status)) {
      this.checkAbort(row.job_id, now);
      this.maybeComplete(row.job_id, now);
    }
    return this.executionRow(row.job_id, row.thing_name, row.execution_number)!;
  }

  /** Released executions a device may act on, running ones first, then by queue time. */
  pending(thingName: string): ExecutionRow[] {
    return this.q<[string], ExecutionRow>(
      `SELECT * FROM job_executions WHERE thing_name = ? AND released = 1 AND status IN ('IN_PROGRESS', 'QUEUED')
         ORDER BY status = 'IN_PROGRESS' DESC, queued_at, job_id`,
    ).all(thingName);
  }

  // ---- timers ----

  /** The earliest moment a timer is due, for the scheduler to sleep until. */
  nextDue(): number | undefined {
    const row = this.q<[], { due: number | null }>(
      `SELECT min(due) AS due FROM (
           SELECT min(timeout_at) AS due FROM job_executions WHERE timeout_at IS NOT NULL
           UNION ALL SELECT min(rollout_next_at) FROM thing_jobs WHERE rollout_next_at IS NOT NULL)`,
    ).get();
    return row?.due ?? undefined;
  }

  /** Runs every timer due at the clock's now: rollout windows and execution timeouts. Returns how many fired. */
  runDue(): number {
    const now = this.clock();
    return this.mutate(() => {
      let fired = 0;
      const jobs = this.q<[number], JobRow>(
        "SELECT * FROM thing_jobs WHERE rollout_next_at IS NOT NULL AND rollout_next_at <= ? AND status = 'IN_PROGRESS'",
      ).all(now);
      for (const job of jobs) fired += this.release(job, now);
      const late = this.q<[number], ExecutionRow>(
        "SELECT * FROM job_executions WHERE timeout_at IS NOT NULL AND timeout_at <= ? AND status = 'IN_PROGRESS'",
      ).all(now);
      for (const row of late) {
        this.transition(row, "TIMED_OUT", now, { byDevice: false });
        fired++;
      }
      return fired;
    });
  }

  // ---- internals ----

  private queue(jobId: string, thingName: string, executionNumber: number, now: number): void {
    this.q(
      `INSERT INTO job_executions (job_id, thing_name, execution_number, status, released, queued_at, last_updated_at,
           version_number) VALUES (?, ?, ?, 'QUEUED', 0, ?, ?, 1)`,
    ).run(jobId, thingName, executionNumber, now, now);
  }

  /** Starts an execution for a thing newly targeted by a continuous job, unless it has one that counts. */
  private startFor(jobId: string, thingName: string, now: number): void {
    const latest = this.executionRow(jobId, thingName);
    if (!latest) this.queue(jobId, thingName, 1, now);
    else if (latest.status === "REMOVED") this.queue(jobId, thingName, latest.execution_number + 1, now);
  }

  /** Offers queued executions to devices, at most `maximumPerMinute` per one-minute window. */
  private release(job: JobRow, now: number): number {
    if (job.status !== "IN_PROGRESS") return 0;
    if (job.maximum_per_minute === null) {
      const released = this.q<[string], { thing_name: string }>(
        "UPDATE job_executions SET released = 1 WHERE job_id = ? AND released = 0 AND status = 'QUEUED' RETURNING thing_name",
      ).all(job.job_id);
      for (const r of released) this.touched.add(r.thing_name);
      return released.length;
    }
    let start = job.rollout_window_start;
    let count = job.rollout_window_count;
    if (now >= start + MINUTE) {
      start = now;
      count = 0;
    }
    const budget = Math.max(0, job.maximum_per_minute - count);
    const released = this.q<[string, number, string], { thing_name: string }>(
      `UPDATE job_executions SET released = 1 WHERE rowid IN (
           SELECT rowid FROM job_executions WHERE job_id = ? AND released = 0 AND status = 'QUEUED'
           ORDER BY queued_at, thing_name LIMIT ?)
         AND job_id = ? RETURNING thing_name`,
    ).all(job.job_id, budget, job.job_id);
    for (const r of released) this.touched.add(r.thing_name);
    count += released.length;
    const waiting =
      this.q<[string], { n: number }>(
        "SELECT 1 AS n FROM job_executions WHERE job_id = ? AND released = 0 AND status = 'QUEUED' LIMIT 1",
      ).get(job.job_id) !== undefined;
    this.q(
      "UPDATE thing_jobs SET rollout_window_start = ?, rollout_window_count = ?, rollout_next_at = ? WHERE job_id = ?",
    ).run(start, count, waiting ? start + MINUTE : null, job.job_id);
    return released.length;
  }

  /** A snapshot job is complete once no execution is left queued or in progress. */
  private maybeComplete(jobId: string, now: number): void {
    const job = this.jobRow(jobId);
    if (!job || job.status !== "IN_PROGRESS" || job.target_selection !== "SNAPSHOT") return;
    const open = this.q<[string], { n: number }>(
      "SELECT 1 AS n FROM job_executions WHERE job_id = ? AND status IN ('QUEUED', 'IN_PROGRESS') LIMIT 1",
    ).get(jobId);
    if (open) return;
    this.q(
      "UPDATE thing_jobs SET status = 'COMPLETED', completed_at = ?, last_updated_at = ?, rollout_next_at = NULL WHERE job_id = ?",
    ).run(isoNow(now), isoNow(now), jobId);
  }

  /** AWS abortConfig: cancel the job once a failure type crosses its share of the executed things. */
  private checkAbort(jobId: string, now: number): void {
    const job = this.jobRow(jobId);
    if (!job?.abort_config || job.status !== "IN_PROGRESS") return;
    const counts = this.statusCounts(jobId);
    const failed = counts.get("FAILED") ?? 0;
    const rejected = counts.get("REJECTED") ?? 0;
    const timedOut = counts.get("TIMED_OUT") ?? 0;
    const executed = (counts.get("SUCCEEDED") ?? 0) + failed + rejected + timedOut;
    const byType = { FAILED: failed, REJECTED: rejected, TIMED_OUT: timedOut, ALL: failed + rejected + timedOut };
    const config = JSON.parse(job.abort_config) as AbortConfig;
    for (const c of config.criteriaList) {
      if (executed < c.minNumberOfExecutedThings || executed === 0) continue;
      if ((byType[c.failureType] * 100) / executed >= c.thresholdPercentage) {
        this.cancelJob(job, `Aborted: ${c.failureType} reached ${c.thresholdPercentage}%`, now, "abortConfig");
        return;
      }
    }
  }

  private statusCounts(jobId: string): Map<ExecutionStatus, number> {
    // The latest execution of each thing speaks for it: earlier ones were REMOVED.
    const rows = this.q<[string], { status: ExecutionStatus; n: number }>(
      `SELECT status, count(*) AS n FROM job_executions e WHERE job_id = ?
           AND execution_number = (SELECT max(execution_number) FROM job_executions x
                                   WHERE x.job_id = e.job_id AND x.thing_name = e.thing_name)
         GROUP BY status`,
    ).all(jobId);
    return new Map(rows.map((r) => [r.status, r.n]));
  }

  private processDetails(row: JobRow, targets: Targets): JobProcessDetails {
    const c = this.statusCounts(row.job_id);
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

  private targetsOf(row: JobRow): Targets {
    const groups = this.q<[string], { group_name: string }>(
      "SELECT group_name FROM thing_job_groups WHERE job_id = ? ORDER BY position",
    )
      .all(row.job_id)
      .map((g) => g.group_name);
    return { groups, things: JSON.parse(row.target_things) as string[] };
  }

  private groupIds(jobId: string): string[] {
    return this.q<[string], { group_id: string }>("SELECT group_id FROM thing_job_groups WHERE job_id = ?")
      .all(jobId)
      .map((g) => g.group_id);
  }

  private continuousJobsOf(groupId: string): JobRow[] {
    return this.q<[string], JobRow>(
      `SELECT j.* FROM thing_jobs j JOIN thing_job_groups g ON g.job_id = j.job_id
         WHERE g.group_id = ? AND j.status = 'IN_PROGRESS' AND j.target_selection = 'CONTINUOUS'`,
    ).all(groupId);
  }

  private thingAdded(groupId: string, thingName: string): void {
    const now = this.clock();
    for (const job of this.continuousJobsOf(groupId)) {
      this.startFor(job.job_id, thingName, now);
      this.release(job, now);
    }
  }

  /** A deleted thing can never finish: its open executions are REMOVED, which may complete snapshot jobs. */
  private thingDeleted(thingName: string): void {
    const now = this.clock();
    const open = this.q<[number, string], { job_id: string }>(
      `UPDATE job_executions SET status = 'REMOVED', last_updated_at = ?, timeout_at = NULL
       WHERE thing_name = ? AND status IN ('QUEUED', 'IN_PROGRESS') RETURNING job_id`,
    ).all(now, thingName);
    for (const row of open) this.maybeComplete(row.job_id, now);
  }

  private thingRemoved(e: { groupId: string; thingName: string }): void {
    const now = this.clock();
    const stillIn = new Set(this.registry.groupsOf(e.thingName));
    for (const job of this.continuousJobsOf(e.groupId)) {
      const direct = (JSON.parse(job.target_things) as string[]).includes(e.thingName);
      if (direct || this.groupIds(job.job_id).some((g) => stillIn.has(g))) continue;
      const latest = this.executionRow(job.job_id, e.thingName);
      if (latest?.status !== "QUEUED") continue;
      this.q(
        `UPDATE job_executions SET status = 'REMOVED', last_updated_at = ?
           WHERE job_id = ? AND thing_name = ? AND execution_number = ?`,
      ).run(now, job.job_id, e.thingName, latest.execution_number);
      if (latest.released) this.touched.add(e.thingName);
    }
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
