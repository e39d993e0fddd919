import type { AbortConfig, ExecutionStatus, JobStatus, TargetSelection } from "./types.js";

/** A thing job as the stores keep it; times are epoch ms. */
export interface StoredJob {
  jobId: string;
  domain: string;
  description: string;
  comment: string | null;
  status: JobStatus;
  targetSelection: TargetSelection;
  documentId: string;
  /** The things targeted by name. */
  targetThings: string[];
  createdAt: number;
  lastUpdatedAt: number;
  completedAt: number | null;
  canceledAt: number | null;
  maximumPerMinute: number | null;
  inProgressTimeoutMinutes: number | null;
  abortConfig: AbortConfig | null;
  /** The rollout's current one-minute window: when it began and how many executions it released. */
  rolloutWindowStart: number;
  rolloutWindowCount: number;
  /** When the rollout releases more; null: nothing waits for a window. */
  rolloutNextAt: number | null;
}

/** An execution of a job on one thing; times are epoch ms. */
export interface StoredExecution {
  jobId: string;
  thingName: string;
  executionNumber: number;
  status: ExecutionStatus;
  /** False while the rollout has not reached it: QUEUED but not yet offered to the device. */
  released: boolean;
  queuedAt: number;
  startedAt: number | null;
  lastUpdatedAt: number;
  versionNumber: number;
  statusDetails: Record<string, string> | null;
  forceCanceled: boolean;
  inProgressDeadline: number | null;
  stepDeadline: number | null;
  /** The earlier of the deadlines while IN_PROGRESS. */
  timeoutAt: number | null;
}

/** A job as `insertJob` takes it: its fields at creation. */
export type NewStoredJob = Pick<
  StoredJob,
  | "jobId"
  | "domain"
  | "description"
  | "targetSelection"
  | "documentId"
  | "targetThings"
  | "createdAt"
  | "maximumPerMinute"
  | "inProgressTimeoutMinutes"
  | "abortConfig"
>;

/** The moving parts of an execution that `updateExecution` writes. */
export type ExecutionChange = Pick<
  StoredExecution,
  | "status"
  | "startedAt"
  | "lastUpdatedAt"
  | "versionNumber"
  | "statusDetails"
  | "inProgressDeadline"
  | "stepDeadline"
  | "timeoutAt"
>;

/** An execution's primary key: job, thing, execution number. */
export function executionKey(row: StoredExecution): [string, string, number] {
  return [row.jobId, row.thingName, row.executionNumber];
}

/** A job document; `content` (the JSON text as uploaded) is null until its one signed PUT. Times are epoch ms. */
export interface StoredJobDocument {
  documentId: string;
  documentName: string;
  domain: string;
  content: string | null;
  createdAt: number;
  uploadExpiresAt: number;
  uploadedAt: number | null;
}

/** A document as `insertDocument` takes it, before its upload. */
export type NewJobDocument = Omit<StoredJobDocument, "content" | "uploadedAt">;

/** Which executions a change reached: the things whose devices hear of it if they were released. */
export interface ReachedExecution {
  thingName: string;
  released: boolean;
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
 * in its methods through AsyncLocalStorage, so callers never pass a handle and a
 * statement of another request, outside the callback, never runs inside it; the
 * job transactions of every process sharing the database run one at a time, as
 * SQLite's do, so a timer due is handled by one process only.
 */
export interface JobStore {
  /** Runs `work` in one transaction: all of it or none. Resolves once committed. */
  transaction<T>(work: () => Promise<T>): Promise<T>;

  // ---- documents ----
  insertDocument(doc: NewJobDocument): Promise<void>;
  document(documentId: string): Promise<StoredJobDocument | undefined>;
  /** Stores the content of a document not uploaded yet; false when it already was. */
  uploadDocument(documentId: string, content: string, at: number): Promise<boolean>;

  // ---- jobs ----
  insertJob(job: NewStoredJob): Promise<void>;
  /** Adds target groups from `position` on; a group already targeted is left alone. */
  addGroups(jobId: string, groups: readonly { id: string; name: string }[], position: number): Promise<void>;
  job(jobId: string): Promise<StoredJob | undefined>;
  /** Newest first, then by id. */
  jobs(filter: {
    status: JobStatus | null;
    targetSelection: TargetSelection | null;
    groupId: string | null;
  }): Promise<StoredJob[]>;
  /** Sets the comment when one is given, and the last update. */
  touchJob(jobId: string, comment: string | null, at: number): Promise<void>;
  /** The job CANCELED (its rollout stopped); its QUEUED executions CANCELED, answered. */
  cancelJob(jobId: string, comment: string | null, now: number): Promise<ReachedExecution[]>;
  completeJob(jobId: string, now: number): Promise<void>;
  /** Deletes the job and its executions; answers the things that had one released and open. */
  deleteJob(jobId: string): Promise<string[]>;
  /** Target group names, in the order they were added. */
  groupNames(jobId: string): Promise<string[]>;
  groupIds(jobId: string): Promise<string[]>;
  /** The IN_PROGRESS continuous jobs that target the group. */
  continuousJobsOf(groupId: string): Promise<StoredJob[]>;

  // ---- executions ----
  executions(jobId: string, status: ExecutionStatus | null): Promise<StoredExecution[]>;
  /** The execution with `executionNumber`, or the thing's latest one. */
  execution(jobId: string, thingName: string, executionNumber?: number): Promise<StoredExecution | undefined>;
  /** A new QUEUED execution, not released yet. */
  queue(jobId: string, thingName: string, executionNumber: number, now: number): Promise<void>;
  updateExecution(row: StoredExecution, change: ExecutionChange): Promise<void>;
  cancelExecution(row: StoredExecution, force: boolean, now: number): Promise<void>;
  deleteExecution(row: StoredExecution): Promise<void>;
  markRemoved(row: StoredExecution, now: number): Promise<void>;
  /** Every QUEUED or IN_PROGRESS execution of the thing REMOVED; answers their jobs. */
  removeOpenOf(thingName: string, now: number): Promise<string[]>;
  /** Released executions a device may act on, running ones first, then by queue time. */
  pending(thingName: string): Promise<StoredExecution[]>;
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
  dueRollouts(now: number): Promise<StoredJob[]>;
  /** IN_PROGRESS executions past their timeout. */
  lateExecutions(now: number): Promise<StoredExecution[]>;

  // ---- retention ----
  /** Deletes up to `limit` finished executions last changed before `before`, the longest finished first; answers how many. */
  pruneFinished(before: number, limit: number): Promise<number>;
}
