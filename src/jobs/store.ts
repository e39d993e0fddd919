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

/** A job document as stored: `content` is null until its one signed PUT. */
export interface JobDocumentRow {
  document_id: string;
  document_name: string;
  domain: string;
  content: string | null;
  created_at: string;
  upload_expires_at: number;
  uploaded_at: string | null;
}

/**
 * Where thing jobs, their executions and their documents are kept, one method
 * per use case, every one answering asynchronously as a networked database
 * would. The rollout and the device side read and write as one (release a
 * window's budget, complete a job when its last execution ends): their
 * changes run inside `transaction`, whose callback awaits this store only.
 *
 * SQLite runs the callback between BEGIN IMMEDIATE and COMMIT on the process's
 * connection, one transaction at a time, begun in a turn of the event loop of its
 * own so that no other chain's statement runs inside it; its methods answer at
 * once, so the transaction is open for no more than the callback's own work. A PostgreSQL
 * store checks one client out of its pool for the callback and finds it again
 * in its methods through AsyncLocalStorage, so callers never pass a handle.
 */
export interface JobStore {
  /** Runs `work` in one transaction: all of it or none. Resolves once committed. */
  transaction<T>(work: () => Promise<T>): Promise<T>;

  // ---- documents ----
  insertDocument(
    doc: Pick<JobDocumentRow, "document_id" | "document_name" | "domain" | "created_at" | "upload_expires_at">,
  ): Promise<void>;
  document(documentId: string): Promise<JobDocumentRow | undefined>;
  /** Stores the content of a document not uploaded yet; false when it already was. */
  uploadDocument(documentId: string, content: string, at: string): Promise<boolean>;

  // ---- jobs ----
  insertJob(job: NewJobRow): Promise<void>;
  /** Adds target groups from `position` on; a group already targeted is left alone. */
  addGroups(jobId: string, groups: readonly { id: string; name: string }[], position: number): Promise<void>;
  job(jobId: string): Promise<JobRow | undefined>;
  /** Newest first, then by id. */
  jobs(filter: {
    status: JobStatus | null;
    targetSelection: TargetSelection | null;
    groupId: string | null;
  }): Promise<JobRow[]>;
  /** Sets the comment when one is given, and the last update. */
  touchJob(jobId: string, comment: string | null, at: string): Promise<void>;
  /** The job CANCELED (its rollout stopped); its QUEUED executions CANCELED, answered. */
  cancelJob(
    jobId: string,
    comment: string | null,
    at: string,
    now: number,
  ): Promise<{ thing_name: string; released: number }[]>;
  completeJob(jobId: string, at: string): Promise<void>;
  /** Deletes the job and its executions; answers the things that had one released and open. */
  deleteJob(jobId: string): Promise<string[]>;
  /** Target group names, in the order they were added. */
  groupNames(jobId: string): Promise<string[]>;
  groupIds(jobId: string): Promise<string[]>;
  /** The IN_PROGRESS continuous jobs that target the group. */
  continuousJobsOf(groupId: string): Promise<JobRow[]>;

  // ---- executions ----
  executions(jobId: string, status: ExecutionStatus | null): Promise<ExecutionRow[]>;
  /** The execution with `executionNumber`, or the thing's latest one. */
  execution(jobId: string, thingName: string, executionNumber?: number): Promise<ExecutionRow | undefined>;
  /** A new QUEUED execution, not released yet. */
  queue(jobId: string, thingName: string, executionNumber: number, now: number): Promise<void>;
  updateExecution(row: ExecutionRow, change: ExecutionChange): Promise<void>;
  cancelExecution(row: ExecutionRow, force: boolean, now: number): Promise<void>;
  deleteExecution(row: ExecutionRow): Promise<void>;
  markRemoved(row: ExecutionRow, now: number): Promise<void>;
  /** Every QUEUED or IN_PROGRESS execution of the thing REMOVED; answers their jobs. */
  removeOpenOf(thingName: string, now: number): Promise<string[]>;
  /** Released executions a device may act on, running ones first, then by queue time. */
  pending(thingName: string): Promise<ExecutionRow[]>;
  /** How many executions of the job are in each status, counting each thing's latest execution only. */
  statusCounts(jobId: string): Promise<Map<ExecutionStatus, number>>;
  /** Any execution of the job still QUEUED or IN_PROGRESS. */
  hasOpen(jobId: string): Promise<boolean>;

  // ---- rollout ----
  /** Releases up to `limit` (every one when null) of the job's queued executions, oldest first; answers their things. */
  release(jobId: string, limit: number | null): Promise<string[]>;
  /** Queued executions not released yet. */
  hasUnreleased(jobId: string): Promise<boolean>;
  setRolloutWindow(jobId: string, start: number, count: number, nextAt: number | null): Promise<void>;

  // ---- timers ----
  /** The earliest execution timeout or rollout window due. */
  nextDue(): Promise<number | undefined>;
  /** IN_PROGRESS jobs whose next rollout window is due. */
  dueRollouts(now: number): Promise<JobRow[]>;
  /** IN_PROGRESS executions past their timeout. */
  lateExecutions(now: number): Promise<ExecutionRow[]>;
}
