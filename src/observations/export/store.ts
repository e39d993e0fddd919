import type { ExecutionStatus, ExportExecution, ExportJob, ListQuery } from "./types.js";

export interface StoredJob {
  job: ExportJob;
  owner: string;
  nextFire: number | null;
}

/** One keyset page on the creation sequence: `last` is the sequence of its last item, the next page's marker. */
export interface ExportPage<T> {
  items: T[];
  last: number | undefined;
  hasNext: boolean;
}

/** Fields an execution's transition may set beside its status. */
export interface ExecutionProgress {
  completion?: string;
  dataScanned?: number;
  engineMs?: number;
}

/**
 * Which runner an open execution is for, until when (epoch ms) unless the runner renews it: the
 * runners of the processes sharing a database run each execution once, and take over those of a
 * runner that died once its claims end.
 */
export interface ExecutionClaim {
  holder: string;
  until: number;
}

/**
 * Where export jobs and their executions are kept. Every method answers asynchronously, as a
 * networked database would (no request reads them on a hot path), each one atomic.
 */
export interface ExportStore {
  /** `nextFire`: a scheduled job's next fire time (epoch ms) while enabled, else null. */
  insertJob(owner: string, job: ExportJob, nextFire: number | null): Promise<void>;
  updateJob(job: ExportJob, nextFire: number | null): Promise<void>;
  setNextFire(id: string, nextFire: number | null): Promise<void>;
  job(id: string): Promise<StoredJob | undefined>;
  /** Scheduled jobs whose next fire is at or before `now`, earliest first. */
  dueJobs(now: number): Promise<StoredJob[]>;
  /** One page of the owner's jobs. */
  jobs(owner: string, q: ListQuery): Promise<ExportPage<ExportJob>>;
  /** Deletes the job with its executions. */
  deleteJob(id: string): Promise<void>;
  /** Stores a new execution, held by `claim`'s runner (the one it is queued in). */
  insertExecution(e: Omit<ExportExecution, "seq">, claim: ExecutionClaim): Promise<void>;
  execution(id: string): Promise<ExportExecution | undefined>;
  /** One page of the owner's executions, of one job when `jobId` is given. */
  executions(owner: string, jobId: string | undefined, q: ListQuery): Promise<ExportPage<ExportExecution>>;
  executionsOfJob(jobId: string): Promise<ExportExecution[]>;
  /**
   * Executions QUEUED or RUNNING that no runner holds (never claimed, or the claim ended at or
   * before `now`: its runner died or stopped), in submission order.
   */
  openExecutions(now: number): Promise<ExportExecution[]>;
  /**
   * Marks an open execution RUNNING for `claim`'s runner, unless another runner holds it (a claim
   * that has not ended at `now`); answers whether it is `claim.holder`'s now.
   */
  claimExecution(id: string, claim: ExecutionClaim, now: number): Promise<boolean>;
  /**
   * Extends the claims of `holder` on its open executions to `until` (`0` hands them back: another
   * runner may take them at once); answers the ids of those it still holds.
   */
  renewExecutionClaims(holder: string, until: number): Promise<string[]>;
  /** Moves an execution on, unless it was cancelled meanwhile; answers whether it moved. */
  transition(id: string, to: ExecutionStatus, fields?: ExecutionProgress): Promise<boolean>;
  /**
   * Takes or renews for `holder` the lease on firing the export schedules, until `now + ttlMs`
   * (epoch ms); answers whether `holder` has it. Of the schedulers of the processes sharing the
   * database one fires; when it dies (stops renewing) another takes over after `ttlMs`.
   */
  holdScheduleLease(holder: string, now: number, ttlMs: number): Promise<boolean>;
}
