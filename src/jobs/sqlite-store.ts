import { statementCache, type Db } from "../store/index.js";
import type { ExecutionChange, ExecutionRow, JobDocumentRow, JobRow, JobStore, NewJobRow } from "./store.js";
import type { ExecutionStatus, JobStatus, TargetSelection } from "./types.js";

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

  async insertDocument(
    doc: Pick<JobDocumentRow, "document_id" | "document_name" | "domain" | "created_at" | "upload_expires_at">,
  ): Promise<void> {
    this.q(
      `INSERT INTO job_documents (document_id, document_name, domain, created_at, upload_expires_at)
         VALUES (?, ?, ?, ?, ?)`,
    ).run(doc.document_id, doc.document_name, doc.domain, doc.created_at, doc.upload_expires_at);
  }

  async document(documentId: string): Promise<JobDocumentRow | undefined> {
    return this.q<[string], JobDocumentRow>("SELECT * FROM job_documents WHERE document_id = ?").get(documentId);
  }

  async uploadDocument(documentId: string, content: string, at: string): Promise<boolean> {
    return (
      this.q("UPDATE job_documents SET content = ?, uploaded_at = ? WHERE document_id = ? AND content IS NULL").run(
        content,
        at,
        documentId,
      ).changes > 0
    );
  }

  // ---- jobs ----

  async insertJob(job: NewJobRow): Promise<void> {
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
      job.createdAt,
      job.createdAt,
      job.maximumPerMinute,
      job.inProgressTimeoutMinutes,
      job.abortConfig,
    );
  }

  async addGroups(jobId: string, groups: readonly { id: string; name: string }[], position: number): Promise<void> {
    const add = this.q(
      "INSERT OR IGNORE INTO thing_job_groups (job_id, group_id, group_name, position) VALUES (?, ?, ?, ?)",
    );
    groups.forEach((g, i) => add.run(jobId, g.id, g.name, position + i));
  }

  async job(jobId: string): Promise<JobRow | undefined> {
    return this.q<[string], JobRow>("SELECT * FROM thing_jobs WHERE job_id = ?").get(jobId);
  }

  async jobs(filter: {
    status: JobStatus | null;
    targetSelection: TargetSelection | null;
    groupId: string | null;
  }): Promise<JobRow[]> {
    return this.q<[{ status: string | null; sel: string | null; group: string | null }], JobRow>(
      `SELECT * FROM thing_jobs j
         WHERE (@status IS NULL OR status = @status) AND (@sel IS NULL OR target_selection = @sel)
           AND (@group IS NULL OR EXISTS (SELECT 1 FROM thing_job_groups g WHERE g.job_id = j.job_id AND g.group_id = @group))
         ORDER BY created_at DESC, job_id`,
    ).all({ status: filter.status, sel: filter.targetSelection, group: filter.groupId });
  }

  async touchJob(jobId: string, comment: string | null, at: string): Promise<void> {
    this.q("UPDATE thing_jobs SET comment = COALESCE(?, comment), last_updated_at = ? WHERE job_id = ?").run(
      comment,
      at,
      jobId,
    );
  }

  async cancelJob(
    jobId: string,
    comment: string | null,
    at: string,
    now: number,
  ): Promise<{ thing_name: string; released: number }[]> {
    this.q(
      `UPDATE thing_jobs SET status = 'CANCELED', canceled_at = ?, last_updated_at = ?, comment = COALESCE(?, comment),
           rollout_next_at = NULL WHERE job_id = ?`,
    ).run(at, at, comment, jobId);
    return this.q<[number, string], { thing_name: string; released: number }>(
      `UPDATE job_executions SET status = 'CANCELED', last_updated_at = ?, timeout_at = NULL
         WHERE job_id = ? AND status = 'QUEUED' RETURNING thing_name, released`,
    ).all(now, jobId);
  }

  async completeJob(jobId: string, at: string): Promise<void> {
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

  async continuousJobsOf(groupId: string): Promise<JobRow[]> {
    return this.q<[string], JobRow>(
      `SELECT j.* FROM thing_jobs j JOIN thing_job_groups g ON g.job_id = j.job_id
         WHERE g.group_id = ? AND j.status = 'IN_PROGRESS' AND j.target_selection = 'CONTINUOUS'`,
    ).all(groupId);
  }

  // ---- executions ----

  async executions(jobId: string, status: ExecutionStatus | null): Promise<ExecutionRow[]> {
    return this.q<[{ job: string; status: string | null }], ExecutionRow>(
      `SELECT * FROM job_executions WHERE job_id = @job AND (@status IS NULL OR status = @status)
         ORDER BY thing_name, execution_number`,
    ).all({ job: jobId, status });
  }

  async execution(jobId: string, thingName: string, executionNumber?: number): Promise<ExecutionRow | undefined> {
    return executionNumber === undefined
      ? this.q<[string, string], ExecutionRow>(
          `SELECT * FROM job_executions WHERE job_id = ? AND thing_name = ?
             ORDER BY execution_number DESC LIMIT 1`,
        ).get(jobId, thingName)
      : this.q<[string, string, number], ExecutionRow>(
          "SELECT * FROM job_executions WHERE job_id = ? AND thing_name = ? AND execution_number = ?",
        ).get(jobId, thingName, executionNumber);
  }

  async queue(jobId: string, thingName: string, executionNumber: number, now: number): Promise<void> {
    this.q(
      `INSERT INTO job_executions (job_id, thing_name, execution_number, status, released, queued_at, last_updated_at,
           version_number) VALUES (?, ?, ?, 'QUEUED', 0, ?, ?, 1)`,
    ).run(jobId, thingName, executionNumber, now, now);
  }

  async updateExecution(row: ExecutionRow, c: ExecutionChange): Promise<void> {
    this.q(
      `UPDATE job_executions SET status = ?, started_at = ?, last_updated_at = ?, version_number = ?, status_details = ?,
           in_progress_deadline = ?, step_deadline = ?, timeout_at = ?
         WHERE job_id = ? AND thing_name = ? AND execution_number = ?`,
    ).run(
      c.status,
      c.started_at,
      c.last_updated_at,
      c.version_number,
      c.status_details,
      c.in_progress_deadline,
      c.step_deadline,
      c.timeout_at,
      row.job_id,
      row.thing_name,
      row.execution_number,
    );
  }

  async cancelExecution(row: ExecutionRow, force: boolean, now: number): Promise<void> {
    this.q(
      `UPDATE job_executions SET status = 'CANCELED', force_canceled = ?, last_updated_at = ?, timeout_at = NULL
         WHERE job_id = ? AND thing_name = ? AND execution_number = ?`,
    ).run(force ? 1 : 0, now, row.job_id, row.thing_name, row.execution_number);
  }

  async deleteExecution(row: ExecutionRow): Promise<void> {
    this.q("DELETE FROM job_executions WHERE job_id = ? AND thing_name = ? AND execution_number = ?").run(
      row.job_id,
      row.thing_name,
      row.execution_number,
    );
  }

  async markRemoved(row: ExecutionRow, now: number): Promise<void> {
    this.q(
      `UPDATE job_executions SET status = 'REMOVED', last_updated_at = ?
         WHERE job_id = ? AND thing_name = ? AND execution_number = ?`,
    ).run(now, row.job_id, row.thing_name, row.execution_number);
  }

  async removeOpenOf(thingName: string, now: number): Promise<string[]> {
    return this.q<[number, string], { job_id: string }>(
      `UPDATE job_executions SET status = 'REMOVED', last_updated_at = ?, timeout_at = NULL
       WHERE thing_name = ? AND status IN ('QUEUED', 'IN_PROGRESS') RETURNING job_id`,
    )
      .all(now, thingName)
      .map((r) => r.job_id);
  }

  async pending(thingName: string): Promise<ExecutionRow[]> {
    return this.q<[string], ExecutionRow>(
      `SELECT * FROM job_executions WHERE thing_name = ? AND released = 1 AND status IN ('IN_PROGRESS', 'QUEUED')
         ORDER BY status = 'IN_PROGRESS' DESC, queued_at, job_id`,
    ).all(thingName);
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

  async dueRollouts(now: number): Promise<JobRow[]> {
    return this.q<[number], JobRow>(
      "SELECT * FROM thing_jobs WHERE rollout_next_at IS NOT NULL AND rollout_next_at <= ? AND status = 'IN_PROGRESS'",
    ).all(now);
  }

  async lateExecutions(now: number): Promise<ExecutionRow[]> {
    return this.q<[number], ExecutionRow>(
      "SELECT * FROM job_executions WHERE timeout_at IS NOT NULL AND timeout_at <= ? AND status = 'IN_PROGRESS'",
    ).all(now);
  }
}
