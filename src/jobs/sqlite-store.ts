import { isoNow, statementCache, type Db } from "../store/index.js";
import type {
  ExecutionChange,
  JobStore,
  NewJobDocument,
  NewStoredJob,
  ReachedExecution,
  StoredExecution,
  StoredJob,
  StoredJobDocument,
} from "./store.js";
import { executionKey } from "./store.js";
import { FINISHED_SQL } from "./migrations.js";
import type { AbortConfig, ExecutionStatus, JobStatus, TargetSelection } from "./types.js";

/** The rows of `jobsMigrations`: job times as ISO text, execution times in epoch ms, flags 0 or 1, JSON as text. */
interface JobRow {
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

interface ExecutionRow {
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

interface DocumentRow {
  document_id: string;
  document_name: string;
  domain: string;
  content: string | null;
  created_at: string;
  upload_expires_at: number;
  uploaded_at: string | null;
}

const time = (iso: string): number => Date.parse(iso);
const maybeTime = (iso: string | null): number | null => (iso === null ? null : Date.parse(iso));
const maybeJson = <T>(text: string | null): T | null => (text === null ? null : (JSON.parse(text) as T));

function toJob(r: JobRow): StoredJob {
  return {
    jobId: r.job_id,
    domain: r.domain,
    description: r.description,
    comment: r.comment,
    status: r.status,
    targetSelection: r.target_selection,
    documentId: r.document_id,
    targetThings: JSON.parse(r.target_things) as string[],
    createdAt: time(r.created_at),
    lastUpdatedAt: time(r.last_updated_at),
    completedAt: maybeTime(r.completed_at),
    canceledAt: maybeTime(r.canceled_at),
    maximumPerMinute: r.maximum_per_minute,
    inProgressTimeoutMinutes: r.in_progress_timeout_minutes,
    abortConfig: maybeJson<AbortConfig>(r.abort_config),
    rolloutWindowStart: r.rollout_window_start,
    rolloutWindowCount: r.rollout_window_count,
    rolloutNextAt: r.rollout_next_at,
  };
}

function toExecution(r: ExecutionRow): StoredExecution {
  return {
    jobId: r.job_id,
    thingName: r.thing_name,
    executionNumber: r.execution_number,
    status: r.status,
    released: r.released === 1,
    queuedAt: r.queued_at,
    startedAt: r.started_at,
    lastUpdatedAt: r.last_updated_at,
    versionNumber: r.version_number,
    statusDetails: maybeJson<Record<string, string>>(r.status_details),
    forceCanceled: r.force_canceled === 1,
    inProgressDeadline: r.in_progress_deadline,
    stepDeadline: r.step_deadline,
    timeoutAt: r.timeout_at,
  };
}

function toDocument(r: DocumentRow): StoredJobDocument {
  return {
    documentId: r.document_id,
    documentName: r.document_name,
    domain: r.domain,
    content: r.content,
    createdAt: time(r.created_at),
    uploadExpiresAt: r.upload_expires_at,
    uploadedAt: maybeTime(r.uploaded_at),
  };
}

/** Thing jobs in the process's SQLite database (`jobsMigrations`). */
export class SqliteJobStore implements JobStore {
  /** Each SQL text prepared once: the device path runs a few per message. */
  private readonly q;

  constructor(private readonly db: Db) {
    this.q = statementCache(db);
  }

  /** Job transactions one after the other: SQLite's connection holds one at a time. */
  private tail: Promise<unknown> = Promise.resolve();

  async transaction<T>(work: () => Promise<T>): Promise<T> {
    const run = this.tail.then(() => this.inTransaction(work));
    this.tail = run.catch(() => undefined);
    return run;
  }

  /**
   * The transaction spans the callback's awaits on the process's one connection, so any statement
   * run while it is open is part of it (and rolled back with it). It therefore begins in a turn of
   * the event loop of its own (`setImmediate`): a turn starts with no promise reaction pending, so
   * until it ends only this callback's own chain runs; its awaits are on this store only, whose
   * methods answer at once, so the transaction ends within that turn. Begun in the caller's turn,
   * the reactions of other chains already queued there (the engine writing its state, a dead
   * letter) would have run between the callback's awaits, inside the transaction.
   */
  private inTransaction<T>(work: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      setImmediate(() => {
        this.db.exec("BEGIN IMMEDIATE");
        let result: Promise<T>;
        try {
          result = work();
        } catch (err) {
          result = Promise.reject(err);
        }
        result.then(
          (value) => {
            try {
              this.db.exec("COMMIT");
              resolve(value);
            } catch (err) {
              this.rollback();
              reject(err);
            }
          },
          (err: unknown) => {
            this.rollback();
            reject(err);
          },
        );
      });
    });
  }

  private rollback(): void {
    if (this.db.inTransaction) this.db.exec("ROLLBACK");
  }

  // ---- documents ----

  async insertDocument(doc: NewJobDocument): Promise<void> {
    this.q(
      `INSERT INTO job_documents (document_id, document_name, domain, created_at, upload_expires_at)
         VALUES (?, ?, ?, ?, ?)`,
    ).run(doc.documentId, doc.documentName, doc.domain, isoNow(doc.createdAt), doc.uploadExpiresAt);
  }

  async document(documentId: string): Promise<StoredJobDocument | undefined> {
    const row = this.q<[string], DocumentRow>("SELECT * FROM job_documents WHERE document_id = ?").get(documentId);
    return row && toDocument(row);
  }

  async uploadDocument(documentId: string, content: string, at: number): Promise<boolean> {
    return (
      this.q("UPDATE job_documents SET content = ?, uploaded_at = ? WHERE document_id = ? AND content IS NULL").run(
        content,
        isoNow(at),
        documentId,
      ).changes > 0
    );
  }

  // ---- jobs ----

  async insertJob(job: NewStoredJob): Promise<void> {
    this.q(
      `INSERT INTO thing_jobs (job_id, domain, description, status, target_selection, document_id, target_things,
           created_at, last_updated_at, maximum_per_minute, in_progress_timeout_minutes, abort_config)
         VALUES (?, ?, ?, 'IN_PROGRESS', ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      job.jobId,
      job.domain,
      job.description,
      job.targetSelection,
      job.documentId,
      JSON.stringify(job.targetThings),
      isoNow(job.createdAt),
      isoNow(job.createdAt),
      job.maximumPerMinute,
      job.inProgressTimeoutMinutes,
      job.abortConfig && JSON.stringify(job.abortConfig),
    );
  }

  async addGroups(jobId: string, groups: readonly { id: string; name: string }[], position: number): Promise<void> {
    const add = this.q(
      "INSERT OR IGNORE INTO thing_job_groups (job_id, group_id, group_name, position) VALUES (?, ?, ?, ?)",
    );
    groups.forEach((g, i) => add.run(jobId, g.id, g.name, position + i));
  }

  async job(jobId: string): Promise<StoredJob | undefined> {
    const row = this.q<[string], JobRow>("SELECT * FROM thing_jobs WHERE job_id = ?").get(jobId);
    return row && toJob(row);
  }

  async jobs(filter: {
    status: JobStatus | null;
    targetSelection: TargetSelection | null;
    groupId: string | null;
  }): Promise<StoredJob[]> {
    return this.q<[{ status: string | null; sel: string | null; group: string | null }], JobRow>(
      `SELECT * FROM thing_jobs j
         WHERE (@status IS NULL OR status = @status) AND (@sel IS NULL OR target_selection = @sel)
           AND (@group IS NULL OR EXISTS (SELECT 1 FROM thing_job_groups g WHERE g.job_id = j.job_id AND g.group_id = @group))
         ORDER BY created_at DESC, job_id`,
    )
      .all({ status: filter.status, sel: filter.targetSelection, group: filter.groupId })
      .map(toJob);
  }

  async touchJob(jobId: string, comment: string | null, at: number): Promise<void> {
    this.q("UPDATE thing_jobs SET comment = COALESCE(?, comment), last_updated_at = ? WHERE job_id = ?").run(
      comment,
      isoNow(at),
      jobId,
    );
  }

  async cancelJob(jobId: string, comment: string | null, now: number): Promise<ReachedExecution[]> {
    const at = isoNow(now);
    this.q(
      `UPDATE thing_jobs SET status = 'CANCELED', canceled_at = ?, last_updated_at = ?, comment = COALESCE(?, comment),
           rollout_next_at = NULL WHERE job_id = ?`,
    ).run(at, at, comment, jobId);
    return this.q<[number, string], { thing_name: string; released: number }>(
      `UPDATE job_executions SET status = 'CANCELED', last_updated_at = ?, timeout_at = NULL
         WHERE job_id = ? AND status = 'QUEUED' RETURNING thing_name, released`,
    )
      .all(now, jobId)
      .map((r) => ({ thingName: r.thing_name, released: r.released === 1 }));
  }

  async completeJob(jobId: string, now: number): Promise<void> {
    const at = isoNow(now);
    this.q(
      "UPDATE thing_jobs SET status = 'COMPLETED', completed_at = ?, last_updated_at = ?, rollout_next_at = NULL WHERE job_id = ?",
    ).run(at, at, jobId);
  }

  async deleteJob(jobId: string): Promise<string[]> {
    const pending = this.q<[string], { thing_name: string }>(
      "SELECT thing_name FROM job_executions WHERE job_id = ? AND released = 1 AND status IN ('QUEUED', 'IN_PROGRESS')",
    ).all(jobId);
    this.q("DELETE FROM thing_jobs WHERE job_id = ?").run(jobId);
    return pending.map((p) => p.thing_name);
  }

  async groupNames(jobId: string): Promise<string[]> {
    return this.q<[string], { group_name: string }>(
      "SELECT group_name FROM thing_job_groups WHERE job_id = ? ORDER BY position",
    )
      .all(jobId)
      .map((g) => g.group_name);
  }

  async groupIds(jobId: string): Promise<string[]> {
    return this.q<[string], { group_id: string }>("SELECT group_id FROM thing_job_groups WHERE job_id = ?")
      .all(jobId)
      .map((g) => g.group_id);
  }

  async continuousJobsOf(groupId: string): Promise<StoredJob[]> {
    return this.q<[string], JobRow>(
      `SELECT j.* FROM thing_jobs j JOIN thing_job_groups g ON g.job_id = j.job_id
         WHERE g.group_id = ? AND j.status = 'IN_PROGRESS' AND j.target_selection = 'CONTINUOUS'`,
    )
      .all(groupId)
      .map(toJob);
  }

  // ---- executions ----

  async executions(jobId: string, status: ExecutionStatus | null): Promise<StoredExecution[]> {
    return this.q<[{ job: string; status: string | null }], ExecutionRow>(
      `SELECT * FROM job_executions WHERE job_id = @job AND (@status IS NULL OR status = @status)
         ORDER BY thing_name, execution_number`,
    )
      .all({ job: jobId, status })
      .map(toExecution);
  }

  async execution(jobId: string, thingName: string, executionNumber?: number): Promise<StoredExecution | undefined> {
    const row =
      executionNumber === undefined
        ? this.q<[string, string], ExecutionRow>(
            `SELECT * FROM job_executions WHERE job_id = ? AND thing_name = ?
             ORDER BY execution_number DESC LIMIT 1`,
          ).get(jobId, thingName)
        : this.q<[string, string, number], ExecutionRow>(
            "SELECT * FROM job_executions WHERE job_id = ? AND thing_name = ? AND execution_number = ?",
          ).get(jobId, thingName, executionNumber);
    return row && toExecution(row);
  }

  async queue(jobId: string, thingName: string, executionNumber: number, now: number): Promise<void> {
    this.q(
      `INSERT INTO job_executions (job_id, thing_name, execution_number, status, released, queued_at, last_updated_at,
           version_number) VALUES (?, ?, ?, 'QUEUED', 0, ?, ?, 1)`,
    ).run(jobId, thingName, executionNumber, now, now);
  }

  async updateExecution(row: StoredExecution, c: ExecutionChange): Promise<void> {
    this.q(
      `UPDATE job_executions SET status = ?, started_at = ?, last_updated_at = ?, version_number = ?, status_details = ?,
           in_progress_deadline = ?, step_deadline = ?, timeout_at = ?
         WHERE job_id = ? AND thing_name = ? AND execution_number = ?`,
    ).run(
      c.status,
      c.startedAt,
      c.lastUpdatedAt,
      c.versionNumber,
      c.statusDetails && JSON.stringify(c.statusDetails),
      c.inProgressDeadline,
      c.stepDeadline,
      c.timeoutAt,
      ...executionKey(row),
    );
  }

  async cancelExecution(row: StoredExecution, force: boolean, now: number): Promise<void> {
    this.q(
      `UPDATE job_executions SET status = 'CANCELED', force_canceled = ?, last_updated_at = ?, timeout_at = NULL
         WHERE job_id = ? AND thing_name = ? AND execution_number = ?`,
    ).run(force ? 1 : 0, now, ...executionKey(row));
  }

  async deleteExecution(row: StoredExecution): Promise<void> {
    this.q("DELETE FROM job_executions WHERE job_id = ? AND thing_name = ? AND execution_number = ?").run(
      ...executionKey(row),
    );
  }

  async markRemoved(row: StoredExecution, now: number): Promise<void> {
    this.q(
      `UPDATE job_executions SET status = 'REMOVED', last_updated_at = ?
         WHERE job_id = ? AND thing_name = ? AND execution_number = ?`,
    ).run(now, ...executionKey(row));
  }

  async removeOpenOf(thingName: string, now: number): Promise<string[]> {
    return this.q<[number, string], { job_id: string }>(
      `UPDATE job_executions SET status = 'REMOVED', last_updated_at = ?, timeout_at = NULL
       WHERE thing_name = ? AND status IN ('QUEUED', 'IN_PROGRESS') RETURNING job_id`,
    )
      .all(now, thingName)
      .map((r) => r.job_id);
  }

  async pending(thingName: string): Promise<StoredExecution[]> {
    return this.q<[string], ExecutionRow>(
      `SELECT * FROM job_executions WHERE thing_name = ? AND released = 1 AND status IN ('IN_PROGRESS', 'QUEUED')
         ORDER BY status = 'IN_PROGRESS' DESC, queued_at, job_id`,
    )
      .all(thingName)
      .map(toExecution);
  }

  async statusCounts(jobId: string): Promise<Map<ExecutionStatus, number>> {
    // The latest execution of each thing speaks for it: earlier ones were REMOVED.
    const rows = this.q<[string], { status: ExecutionStatus; n: number }>(
      `SELECT status, count(*) AS n FROM job_executions e WHERE job_id = ?
           AND execution_number = (SELECT max(execution_number) FROM job_executions x
                                   WHERE x.job_id = e.job_id AND x.thing_name = e.thing_name)
         GROUP BY status`,
    ).all(jobId);
    return new Map(rows.map((r) => [r.status, r.n]));
  }

  async hasOpen(jobId: string): Promise<boolean> {
    return (
      this.q<[string], { n: number }>(
        "SELECT 1 AS n FROM job_executions WHERE job_id = ? AND status IN ('QUEUED', 'IN_PROGRESS') LIMIT 1",
      ).get(jobId) !== undefined
    );
  }

  // ---- rollout ----

  async release(jobId: string, limit: number | null): Promise<string[]> {
    const released =
      limit === null
        ? this.q<[string], { thing_name: string }>(
            "UPDATE job_executions SET released = 1 WHERE job_id = ? AND released = 0 AND status = 'QUEUED' RETURNING thing_name",
          ).all(jobId)
        : this.q<[string, number, string], { thing_name: string }>(
            `UPDATE job_executions SET released = 1 WHERE rowid IN (
                 SELECT rowid FROM job_executions WHERE job_id = ? AND released = 0 AND status = 'QUEUED'
                 ORDER BY queued_at, thing_name LIMIT ?)
               AND job_id = ? RETURNING thing_name`,
          ).all(jobId, limit, jobId);
    return released.map((r) => r.thing_name);
  }

  async hasUnreleased(jobId: string): Promise<boolean> {
    return (
      this.q<[string], { n: number }>(
        "SELECT 1 AS n FROM job_executions WHERE job_id = ? AND released = 0 AND status = 'QUEUED' LIMIT 1",
      ).get(jobId) !== undefined
    );
  }

  async setRolloutWindow(jobId: string, start: number, count: number, nextAt: number | null): Promise<void> {
    this.q(
      "UPDATE thing_jobs SET rollout_window_start = ?, rollout_window_count = ?, rollout_next_at = ? WHERE job_id = ?",
    ).run(start, count, nextAt, jobId);
  }

  // ---- timers ----

  async nextDue(): Promise<number | undefined> {
    const row = this.q<[], { due: number | null }>(
      `SELECT min(due) AS due FROM (
           SELECT min(timeout_at) AS due FROM job_executions WHERE timeout_at IS NOT NULL
           UNION ALL SELECT min(rollout_next_at) FROM thing_jobs WHERE rollout_next_at IS NOT NULL)`,
    ).get();
    return row?.due ?? undefined;
  }

  async dueRollouts(now: number): Promise<StoredJob[]> {
    return this.q<[number], JobRow>(
      "SELECT * FROM thing_jobs WHERE rollout_next_at IS NOT NULL AND rollout_next_at <= ? AND status = 'IN_PROGRESS'",
    )
      .all(now)
      .map(toJob);
  }

  async lateExecutions(now: number): Promise<StoredExecution[]> {
    return this.q<[number], ExecutionRow>(
      "SELECT * FROM job_executions WHERE timeout_at IS NOT NULL AND timeout_at <= ? AND status = 'IN_PROGRESS'",
    )
      .all(now)
      .map(toExecution);
  }

  // ---- retention ----

  async pruneFinished(before: number, limit: number): Promise<number> {
    return this.q(
      `DELETE FROM job_executions WHERE rowid IN (
           SELECT rowid FROM job_executions WHERE status IN (${FINISHED_SQL}) AND last_updated_at < ?
           ORDER BY last_updated_at LIMIT ?)`,
    ).run(before, limit).changes;
  }
}
