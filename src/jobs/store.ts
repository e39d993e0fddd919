import type { ExecutionStatus, JobStatus, TargetSelection } from "./types.js";

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

/** A job as `insertJob` takes it: its columns at creation. */
export interface NewJobRow {
  jobId: string;
  domain: string;
  description: string;
  targetSelection: TargetSelection;
  documentId: string;
  /** The things targeted by name (JSON array). */
  targetThings: string[];
  /** ISO time of creation. */
  createdAt: string;
  maximumPerMinute: number | null;
  inProgressTimeoutMinutes: number | null;
  abortConfig: string | null;
}

/** The moving parts of an execution that `updateExecution` writes. */
export type ExecutionChange = Pick<
  ExecutionRow,
  | "status"
  | "started_at"
  | "last_updated_at"
  | "version_number"
  | "status_details"
  | "in_progress_deadline"
  | "step_deadline"
  | "timeout_at"
>;

/**
 * Where thing jobs and their executions are kept, one method per use case.
 * Every change runs inside `transaction`, which the rollout and the device
 * side need to read and write as one (release a window's budget, complete a
 * job when its last execution ends).
 *
 * Synchronous for now, as SQLite answers: the device path (MQTT) and the
 * REST handlers call it in line. The PostgreSQL implementation of the
 * cluster needs `transaction` to take an async callback and every method to
 * answer a Promise; that change of its callers is left to that issue.
 */
export interface JobStore {
  /** Runs `work` in one transaction: all of it or none. */
  transaction<T>(work: () => T): T;

  // ---- jobs ----
  insertJob(job: NewJobRow): void;
  /** Adds target groups from `position` on; a group already targeted is left alone. */
  addGroups(jobId: string, groups: readonly { id: string; name: string }[], position: number): void;
  job(jobId: string): JobRow | undefined;
  /** Newest first, then by id. */
  jobs(filter: { status: JobStatus | null; targetSelection: TargetSelection | null; groupId: string | null }): JobRow[];
  /** Sets the comment when one is given, and the last update. */
  touchJob(jobId: string, comment: string | null, at: string): void;
  /** The job CANCELED (its rollout stopped); its QUEUED executions CANCELED, answered. */
  cancelJob(jobId: string, comment: string | null, at: string, now: number): { thing_name: string; released: number }[];
  completeJob(jobId: string, at: string): void;
  /** Deletes the job and its executions; answers the things that had one released and open. */
  deleteJob(jobId: string): string[];
  /** Target group names, in the order they were added. */
  groupNames(jobId: string): string[];
  groupIds(jobId: string): string[];
  /** The IN_PROGRESS continuous jobs that target the group. */
  continuousJobsOf(groupId: string): JobRow[];

  // ---- executions ----
  executions(jobId: string, status: ExecutionStatus | null): ExecutionRow[];
  /** The execution with `executionNumber`, or the thing's latest one. */
  execution(jobId: string, thingName: string, executionNumber?: number): ExecutionRow | undefined;
  /** A new QUEUED execution, not released yet. */
  queue(jobId: string, thingName: string, executionNumber: number, now: number): void;
  updateExecution(row: ExecutionRow, change: ExecutionChange): void;
  cancelExecution(row: ExecutionRow, force: boolean, now: number): void;
  deleteExecution(row: ExecutionRow): void;
  markRemoved(row: ExecutionRow, now: number): void;
  /** Every QUEUED or IN_PROGRESS execution of the thing REMOVED; answers their jobs. */
  removeOpenOf(thingName: string, now: number): string[];
  /** Released executions a device may act on, running ones first, then by queue time. */
  pending(thingName: string): ExecutionRow[];
  /** How many executions of the job are in each status, counting each thing's latest execution only. */
  statusCounts(jobId: string): Map<ExecutionStatus, number>;
  /** Any execution of the job still QUEUED or IN_PROGRESS. */
  hasOpen(jobId: string): boolean;

  // ---- rollout ----
  /** Releases up to `limit` (every one when null) of the job's queued executions, oldest first; answers their things. */
  release(jobId: string, limit: number | null): string[];
  /** Queued executions not released yet. */
  hasUnreleased(jobId: string): boolean;
  setRolloutWindow(jobId: string, start: number, count: number, nextAt: number | null): void;

  // ---- timers ----
  /** The earliest execution timeout or rollout window due. */
  nextDue(): number | undefined;
  /** IN_PROGRESS jobs whose next rollout window is due. */
  dueRollouts(now: number): JobRow[];
  /** IN_PROGRESS executions past their timeout. */
  lateExecutions(now: number): ExecutionRow[];
}
