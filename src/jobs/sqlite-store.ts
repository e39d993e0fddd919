import { statementCache, type Db } from "../store/index.js";
import type { ExecutionChange, ExecutionRow, JobRow, JobStore, NewJobRow } from "./store.js";
import type { ExecutionStatus, JobStatus, TargetSelection } from "./types.js";

/** Thing jobs in the process's SQLite database (`jobsMigrations`). */
export class SqliteJobStore implements JobStore {
  /** Each SQL text prepared once: the device path runs a few per message. */
  private readonly q;

  constructor(private readonly db: Db) {
    this.q = statementCache(db);
  }

  transaction<T>(work: () => T): T {
    return this.db.transaction(work)();
  }

  // ---- jobs ----

  insertJob(job: NewJobRow): void {
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

  addGroups(jobId: string, groups: readonly { id: string; name: string }[], position: number): void {
    const add = this.q(
      "INSERT OR IGNORE INTO thing_job_groups (job_id, group_id, group_name, position) VALUES (?, ?, ?, ?)",
    );
    groups.forEach((g, i) => add.run(jobId, g.id, g.name, position + i));
  }

  job(jobId: string): JobRow | undefined {
    return this.q<[string], JobRow>("SELECT * FROM thing_jobs WHERE job_id = ?").get(jobId);
  }

  jobs(filter: {
    status: JobStatus | null;
    targetSelection: TargetSelection | null;
    groupId: string | null;
  }): JobRow[] {
    return this.q<[{ status: string | null; sel: string | null; group: string | null }], JobRow>(
      `SELECT * FROM thing_jobs j
         WHERE (@status IS NULL OR status = @status) AND (@sel IS NULL OR target_selection = @sel)
           AND (@group IS NULL OR EXISTS (SELECT 1 FROM thing_job_groups g WHERE g.job_id = j.job_id AND g.group_id = @group))
         ORDER BY created_at DESC, job_id`,
    ).all({ status: filter.status, sel: filter.targetSelection, group: filter.groupId });
  }

  touchJob(jobId: string, comment: string | null, at: string): void {
    this.q("UPDATE thing_jobs SET comment = COALESCE(?, comment), last_updated_at = ? WHERE job_id = ?").run(
      comment,
      at,
      jobId,
    );
  }

  cancelJob(
    jobId: string,
    comment: string | null,
    at: string,
    now: number,
  ): { thing_name: string; released: number }[] {
    this.q(
      `UPDATE thing_jobs SET status = 'CANCELED', canceled_at = ?, last_updated_at = ?, comment = COALESCE(?, comment),
           rollout_next_at = NULL WHERE job_id = ?`,
    ).run(at, at, comment, jobId);
    return this.q<[number, string], { thing_name: string; released: number }>(
      `UPDATE job_executions SET status = 'CANCELED', last_updated_at = ?, timeout_at = NULL
         WHERE job_id = ? AND status = 'QUEUED' RETURNING thing_name, released`,
    ).all(now, jobId);
  }

  completeJob(jobId: string, at: string): void {
    this.q(
      "UPDATE thing_jobs SET status = 'COMPLETED', completed_at = ?, last_updated_at = ?, rollout_next_at = NULL WHERE job_id = ?",
    ).run(at, at, jobId);
  }

  deleteJob(jobId: string): string[] {
    const pending = this.q<[string], { thing_name: string }>(
      "SELECT thing_name FROM job_executions WHERE job_id = ? AND released = 1 AND status IN ('QUEUED', 'IN_PROGRESS')",
    ).all(jobId);
    this.q("DELETE FROM thing_jobs WHERE job_id = ?").run(jobId);
    return pending.map((p) => p.thing_name);
  }

  groupNames(jobId: string): string[] {
    return this.q<[string], { group_name: string }>(
      "SELECT group_name FROM thing_job_groups WHERE job_id = ? ORDER BY position",
    )
      .all(jobId)
      .map((g) => g.group_name);
  }

  groupIds(jobId: string): string[] {
    return this.q<[string], { group_id: string }>("SELECT group_id FROM thing_job_groups WHERE job_id = ?")
      .all(jobId)
      .map((g) => g.group_id);
  }

  continuousJobsOf(groupId: string): JobRow[] {
    return this.q<[string], JobRow>(
      `SELECT j.* FROM thing_jobs j JOIN thing_job_groups g ON g.job_id = j.job_id
         WHERE g.group_id = ? AND j.status = 'IN_PROGRESS' AND j.target_selection = 'CONTINUOUS'`,
    ).all(groupId);
  }

  // ---- executions ----

  executions(jobId: string, status: ExecutionStatus | null): ExecutionRow[] {
    return this.q<[{ job: string; status: string | null }], ExecutionRow>(
      `SELECT * FROM job_executions WHERE job_id = @job AND (@status IS NULL OR status = @status)
         ORDER BY thing_name, execution_number`,
    ).all({ job: jobId, status });
  }

  execution(jobId: string, thingName: string, executionNumber?: number): ExecutionRow | undefined {
    return executionNumber === undefined
      ? this.q<[string, string], ExecutionRow>(
          `SELECT * FROM job_executions WHERE job_id = ? AND thing_name = ?
             ORDER BY execution_number DESC LIMIT 1`,
        ).get(jobId, thingName)
      : this.q<[string, string, number], ExecutionRow>(
          "SELECT * FROM job_executions WHERE job_id = ? AND thing_name = ? AND execution_number = ?",
        ).get(jobId, thingName, executionNumber);
  }

  queue(jobId: string, thingName: string, executionNumber: number, now: number): void {
    this.q(
      `INSERT INTO job_executions (job_id, thing_name, execution_number, status, released, queued_at, last_updated_at,
           version_number) VALUES (?, ?, ?, 'QUEUED', 0, ?, ?, 1)`,
    ).run(jobId, thingName, executionNumber, now, now);
  }

  updateExecution(row: ExecutionRow, c: ExecutionChange): void {
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

  cancelExecution(row: ExecutionRow, force: boolean, now: number): void {
    this.q(
      `UPDATE job_executions SET status = 'CANCELED', force_canceled = ?, last_updated_at = ?, timeout_at = NULL
         WHERE job_id = ? AND thing_name = ? AND execution_number = ?`,
    ).run(force ? 1 : 0, now, row.job_id, row.thing_name, row.execution_number);
  }

  deleteExecution(row: ExecutionRow): void {
    this.q("DELETE FROM job_executions WHERE job_id = ? AND thing_name = ? AND execution_number = ?").run(
      row.job_id,
      row.thing_name,
      row.execution_number,
    );
  }

  markRemoved(row: ExecutionRow, now: number): void {
    this.q(
      `UPDATE job_executions SET status = 'REMOVED', last_updated_at = ?
         WHERE job_id = ? AND thing_name = ? AND execution_number = ?`,
    ).run(now, row.job_id, row.thing_name, row.execution_number);
  }

  removeOpenOf(thingName: string, now: number): string[] {
    return this.q<[number, string], { job_id: string }>(
      `UPDATE job_executions SET status = 'REMOVED', last_updated_at = ?, timeout_at = NULL
       WHERE thing_name = ? AND status IN ('QUEUED', 'IN_PROGRESS') RETURNING job_id`,
    )
      .all(now, thingName)
      .map((r) => r.job_id);
  }

  pending(thingName: string): ExecutionRow[] {
    return this.q<[string], ExecutionRow>(
      `SELECT * FROM job_executions WHERE thing_name = ? AND released = 1 AND status IN ('IN_PROGRESS', 'QUEUED')
         ORDER BY status = 'IN_PROGRESS' DESC, queued_at, job_id`,
    ).all(thingName);
  }

  statusCounts(jobId: string): Map<ExecutionStatus, number> {
    // The latest execution of each thing speaks for it: earlier ones were REMOVED.
    const rows = this.q<[string], { status: ExecutionStatus; n: number }>(
      `SELECT status, count(*) AS n FROM job_executions e WHERE job_id = ?
           AND execution_number = (SELECT max(execution_number) FROM job_executions x
                                   WHERE x.job_id = e.job_id AND x.thing_name = e.thing_name)
         GROUP BY status`,
    ).all(jobId);
    return new Map(rows.map((r) => [r.status, r.n]));
  }

  hasOpen(jobId: string): boolean {
    return (
      this.q<[string], { n: number }>(
        "SELECT 1 AS n FROM job_executions WHERE job_id = ? AND status IN ('QUEUED', 'IN_PROGRESS') LIMIT 1",
      ).get(jobId) !== undefined
    );
  }

  // ---- rollout ----

  release(jobId: string, limit: number | null): string[] {
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

  hasUnreleased(jobId: string): boolean {
    return (
      this.q<[string], { n: number }>(
        "SELECT 1 AS n FROM job_executions WHERE job_id = ? AND released = 0 AND status = 'QUEUED' LIMIT 1",
      ).get(jobId) !== undefined
    );
  }

  setRolloutWindow(jobId: string, start: number, count: number, nextAt: number | null): void {
    this.q(
      "UPDATE thing_jobs SET rollout_window_start = ?, rollout_window_count = ?, rollout_next_at = ? WHERE job_id = ?",
    ).run(start, count, nextAt, jobId);
  }

  // ---- timers ----

  nextDue(): number | undefined {
    const row = this.q<[], { due: number | null }>(
      `SELECT min(due) AS due FROM (
           SELECT min(timeout_at) AS due FROM job_executions WHERE timeout_at IS NOT NULL
           UNION ALL SELECT min(rollout_next_at) FROM thing_jobs WHERE rollout_next_at IS NOT NULL)`,
    ).get();
    return row?.due ?? undefined;
  }

  dueRollouts(now: number): JobRow[] {
    return this.q<[number], JobRow>(
      "SELECT * FROM thing_jobs WHERE rollout_next_at IS NOT NULL AND rollout_next_at <= ? AND status = 'IN_PROGRESS'",
    ).all(now);
  }

  lateExecutions(now: number): ExecutionRow[] {
    return this.q<[number], ExecutionRow>(
      "SELECT * FROM job_executions WHERE timeout_at IS NOT NULL AND timeout_at <= ? AND status = 'IN_PROGRESS'",
    ).all(now);
  }
}
