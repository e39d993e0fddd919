import { AsyncLocalStorage } from "node:async_hooks";
import type pg from "pg";
import { pgQuery, pgTransaction, type PgPool, type PgQueryable } from "../store/index.js";
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
import type { ExecutionStatus, JobStatus, TargetSelection } from "./types.js";

/** The columns of `thing_jobs` under the names of `StoredJob`. */
const JOB = `job_id AS "jobId", domain, description, comment, status, target_selection AS "targetSelection",
  document_id AS "documentId", target_things AS "targetThings", created_at AS "createdAt",
  last_updated_at AS "lastUpdatedAt", completed_at AS "completedAt", canceled_at AS "canceledAt",
  maximum_per_minute AS "maximumPerMinute", in_progress_timeout_minutes AS "inProgressTimeoutMinutes",
  abort_config AS "abortConfig", rollout_window_start AS "rolloutWindowStart",
  rollout_window_count AS "rolloutWindowCount", rollout_next_at AS "rolloutNextAt"`;

/** The columns of `job_executions` under the names of `StoredExecution`. */
const EXECUTION = `job_id AS "jobId", thing_name AS "thingName", execution_number AS "executionNumber", status,
  released, queued_at AS "queuedAt", started_at AS "startedAt", last_updated_at AS "lastUpdatedAt",
  version_number AS "versionNumber", status_details AS "statusDetails", force_canceled AS "forceCanceled",
  in_progress_deadline AS "inProgressDeadline", step_deadline AS "stepDeadline", timeout_at AS "timeoutAt"`;

const DOCUMENT = `document_id AS "documentId", document_name AS "documentName", domain, content,
  created_at AS "createdAt", upload_expires_at AS "uploadExpiresAt", uploaded_at AS "uploadedAt"`;

/** An execution's primary key as a condition on $1, $2 and $3. */
const EXECUTION_KEY = "job_id = $1 AND thing_name = $2 AND execution_number = $3";

/** Arbitrary key of the advisory lock that runs the job transactions of every process one at a time. */
const JOBS_LOCK = 0x6a6f6273;

/**
 * Thing jobs in PostgreSQL (`jobsPgMigrations`), for processes of a cluster sharing one database.
 * A transaction holds one pooled client, which the store's methods find through AsyncLocalStorage
 * while the callback runs; other requests' statements go to the pool and stay out of it. Every job
 * transaction first takes one advisory lock, so those of all processes run one after the other, as
 * SQLite's do: what a transaction reads (a version, a rollout window, whether a job has open
 * executions) still holds when it writes, and a due timer is handled by the first process only.
 */
export class PgJobStore implements JobStore {
  private readonly current = new AsyncLocalStorage<pg.PoolClient>();
  /** This process's job transactions one after the other, in the order asked, each on a client of its own. */
  private tail: Promise<unknown> = Promise.resolve();

  constructor(private readonly pool: PgPool) {}

  async transaction<T>(work: () => Promise<T>): Promise<T> {
    const run = this.tail.then(() =>
      pgTransaction(this.pool, async (client) => {
        await client.query("SELECT pg_advisory_xact_lock($1)", [JOBS_LOCK]);
        return this.current.run(client, work);
      }),
    );
    this.tail = run.catch(() => undefined);
    return run;
  }

  /** The transaction's client when called inside one, the pool otherwise. */
  private get db(): PgQueryable {
    return this.current.getStore() ?? this.pool;
  }

  private async rows<R extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<R[]> {
    return (await pgQuery<R>(this.db, text, values)).rows;
  }

  private async run(text: string, values: unknown[]): Promise<number> {
    return (await pgQuery(this.db, text, values)).rowCount;
  }

  private async exists(text: string, values: unknown[]): Promise<boolean> {
    return (await this.rows(text, values)).length > 0;
  }

  // ---- documents ----

  async insertDocument(doc: NewJobDocument): Promise<void> {
    await this.run(
      `INSERT INTO job_documents (document_id, document_name, domain, created_at, upload_expires_at)
         VALUES ($1, $2, $3, $4, $5)`,
      [doc.documentId, doc.documentName, doc.domain, doc.createdAt, doc.uploadExpiresAt],
    );
  }

  async document(documentId: string): Promise<StoredJobDocument | undefined> {
    const [doc] = await this.rows<StoredJobDocument>(`SELECT ${DOCUMENT} FROM job_documents WHERE document_id = $1`, [
      documentId,
    ]);
    return doc;
  }

  async uploadDocument(documentId: string, content: string, at: number): Promise<boolean> {
    const n = await this.run(
      "UPDATE job_documents SET content = $1, uploaded_at = $2 WHERE document_id = $3 AND content IS NULL",
      [content, at, documentId],
    );
    return n > 0;
  }

  // ---- jobs ----

  async insertJob(job: NewStoredJob): Promise<void> {
    await this.run(
      `INSERT INTO thing_jobs (job_id, domain, description, status, target_selection, document_id, target_things,
           created_at, last_updated_at, maximum_per_minute, in_progress_timeout_minutes, abort_config)
         VALUES ($1, $2, $3, 'IN_PROGRESS', $4, $5, $6, $7, $7, $8, $9, $10)`,
      [
        job.jobId,
        job.domain,
        job.description,
        job.targetSelection,
        job.documentId,
        JSON.stringify(job.targetThings),
        job.createdAt,
        job.maximumPerMinute,
        job.inProgressTimeoutMinutes,
        job.abortConfig && JSON.stringify(job.abortConfig),
      ],
    );
  }

  async addGroups(jobId: string, groups: readonly { id: string; name: string }[], position: number): Promise<void> {
    if (groups.length === 0) return;
    await this.run(
      `INSERT INTO thing_job_groups (job_id, group_id, group_name, position)
         SELECT $1, g.id, g.name, $4 + g.n - 1 FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS g(id, name, n)
       ON CONFLICT DO NOTHING`,
      [jobId, groups.map((g) => g.id), groups.map((g) => g.name), position],
    );
  }

  async job(jobId: string): Promise<StoredJob | undefined> {
    const [job] = await this.rows<StoredJob>(`SELECT ${JOB} FROM thing_jobs WHERE job_id = $1`, [jobId]);
    return job;
  }

  jobs(filter: {
    status: JobStatus | null;
    targetSelection: TargetSelection | null;
    groupId: string | null;
  }): Promise<StoredJob[]> {
    // COLLATE "C": ids in byte order, as SQLite sorts them, whatever the database's locale.
    return this.rows<StoredJob>(
      `SELECT ${JOB} FROM thing_jobs j
         WHERE ($1::text IS NULL OR status = $1) AND ($2::text IS NULL OR target_selection = $2)
           AND ($3::text IS NULL OR EXISTS (SELECT 1 FROM thing_job_groups g WHERE g.job_id = j.job_id AND g.group_id = $3))
         ORDER BY created_at DESC, job_id COLLATE "C"`,
      [filter.status, filter.targetSelection, filter.groupId],
    );
  }

  async touchJob(jobId: string, comment: string | null, at: number): Promise<void> {
    await this.run("UPDATE thing_jobs SET comment = COALESCE($1, comment), last_updated_at = $2 WHERE job_id = $3", [
      comment,
      at,
      jobId,
    ]);
  }

  async cancelJob(jobId: string, comment: string | null, now: number): Promise<ReachedExecution[]> {
    await this.run(
      `UPDATE thing_jobs SET status = 'CANCELED', canceled_at = $1, last_updated_at = $1,
           comment = COALESCE($2, comment), rollout_next_at = NULL WHERE job_id = $3`,
      [now, comment, jobId],
    );
    return this.rows<ReachedExecution>(
      `UPDATE job_executions SET status = 'CANCELED', last_updated_at = $1, timeout_at = NULL
         WHERE job_id = $2 AND status = 'QUEUED' RETURNING thing_name AS "thingName", released`,
      [now, jobId],
    );
  }

  async completeJob(jobId: string, now: number): Promise<void> {
    await this.run(
      `UPDATE thing_jobs SET status = 'COMPLETED', completed_at = $1, last_updated_at = $1, rollout_next_at = NULL
         WHERE job_id = $2`,
      [now, jobId],
    );
  }

  async deleteJob(jobId: string): Promise<string[]> {
    const pending = await this.rows<{ thing_name: string }>(
      "SELECT thing_name FROM job_executions WHERE job_id = $1 AND released AND status IN ('QUEUED', 'IN_PROGRESS')",
      [jobId],
    );
    await this.run("DELETE FROM thing_jobs WHERE job_id = $1", [jobId]);
    return pending.map((p) => p.thing_name);
  }

  async groupNames(jobId: string): Promise<string[]> {
    const rows = await this.rows<{ group_name: string }>(
      "SELECT group_name FROM thing_job_groups WHERE job_id = $1 ORDER BY position",
      [jobId],
    );
    return rows.map((g) => g.group_name);
  }

  async groupIds(jobId: string): Promise<string[]> {
    const rows = await this.rows<{ group_id: string }>("SELECT group_id FROM thing_job_groups WHERE job_id = $1", [
      jobId,
    ]);
    return rows.map((g) => g.group_id);
  }

  continuousJobsOf(groupId: string): Promise<StoredJob[]> {
    return this.rows<StoredJob>(
      `SELECT ${JOB} FROM thing_jobs
         WHERE job_id IN (SELECT job_id FROM thing_job_groups WHERE group_id = $1)
           AND status = 'IN_PROGRESS' AND target_selection = 'CONTINUOUS'`,
      [groupId],
    );
  }

  // ---- executions ----

  executions(jobId: string, status: ExecutionStatus | null): Promise<StoredExecution[]> {
    return this.rows<StoredExecution>(
      `SELECT ${EXECUTION} FROM job_executions WHERE job_id = $1 AND ($2::text IS NULL OR status = $2)
         ORDER BY thing_name COLLATE "C", execution_number`,
      [jobId, status],
    );
  }

  async execution(jobId: string, thingName: string, executionNumber?: number): Promise<StoredExecution | undefined> {
    const [row] = await this.rows<StoredExecution>(
      `SELECT ${EXECUTION} FROM job_executions WHERE job_id = $1 AND thing_name = $2
         AND ($3::int IS NULL OR execution_number = $3) ORDER BY execution_number DESC LIMIT 1`,
      [jobId, thingName, executionNumber ?? null],
    );
    return row;
  }

  async queue(jobId: string, thingName: string, executionNumber: number, now: number): Promise<void> {
    await this.run(
      `INSERT INTO job_executions (job_id, thing_name, execution_number, status, released, queued_at, last_updated_at,
           version_number) VALUES ($1, $2, $3, 'QUEUED', false, $4, $4, 1)`,
      [jobId, thingName, executionNumber, now],
    );
  }

  async updateExecution(row: StoredExecution, c: ExecutionChange): Promise<void> {
    await this.run(
      `UPDATE job_executions SET status = $4, started_at = $5, last_updated_at = $6, version_number = $7,
           status_details = $8, in_progress_deadline = $9, step_deadline = $10, timeout_at = $11
         WHERE ${EXECUTION_KEY}`,
      [
        ...executionKey(row),
        c.status,
        c.startedAt,
        c.lastUpdatedAt,
        c.versionNumber,
        c.statusDetails && JSON.stringify(c.statusDetails),
        c.inProgressDeadline,
        c.stepDeadline,
        c.timeoutAt,
      ],
    );
  }

  async cancelExecution(row: StoredExecution, force: boolean, now: number): Promise<void> {
    await this.run(
      `UPDATE job_executions SET status = 'CANCELED', force_canceled = $4, last_updated_at = $5, timeout_at = NULL
         WHERE ${EXECUTION_KEY}`,
      [...executionKey(row), force, now],
    );
  }

  async deleteExecution(row: StoredExecution): Promise<void> {
    await this.run(`DELETE FROM job_executions WHERE ${EXECUTION_KEY}`, executionKey(row));
  }

  async markRemoved(row: StoredExecution, now: number): Promise<void> {
    await this.run(`UPDATE job_executions SET status = 'REMOVED', last_updated_at = $4 WHERE ${EXECUTION_KEY}`, [
      ...executionKey(row),
      now,
    ]);
  }

  async removeOpenOf(thingName: string, now: number): Promise<string[]> {
    const rows = await this.rows<{ job_id: string }>(
      `UPDATE job_executions SET status = 'REMOVED', last_updated_at = $1, timeout_at = NULL
         WHERE thing_name = $2 AND status IN ('QUEUED', 'IN_PROGRESS') RETURNING job_id`,
      [now, thingName],
    );
    return rows.map((r) => r.job_id);
  }

  pending(thingName: string): Promise<StoredExecution[]> {
    return this.rows<StoredExecution>(
      `SELECT ${EXECUTION} FROM job_executions
         WHERE thing_name = $1 AND released AND status IN ('IN_PROGRESS', 'QUEUED')
         ORDER BY status = 'IN_PROGRESS' DESC, queued_at, job_id COLLATE "C"`,
      [thingName],
    );
  }

  async statusCounts(jobId: string): Promise<Map<ExecutionStatus, number>> {
    // The latest execution of each thing speaks for it: earlier ones were REMOVED.
    const rows = await this.rows<{ status: ExecutionStatus; n: number }>(
      `SELECT status, count(*) AS n FROM job_executions e WHERE job_id = $1
           AND execution_number = (SELECT max(execution_number) FROM job_executions x
                                   WHERE x.job_id = e.job_id AND x.thing_name = e.thing_name)
         GROUP BY status`,
      [jobId],
    );
    return new Map(rows.map((r) => [r.status, r.n]));
  }

  hasOpen(jobId: string): Promise<boolean> {
    return this.exists(
      "SELECT 1 FROM job_executions WHERE job_id = $1 AND status IN ('QUEUED', 'IN_PROGRESS') LIMIT 1",
      [jobId],
    );
  }

  // ---- rollout ----

  async release(jobId: string, limit: number | null): Promise<string[]> {
    const rows = await this.rows<{ thing_name: string }>(
      `UPDATE job_executions SET released = true
         WHERE (job_id, thing_name, execution_number) IN (
           SELECT job_id, thing_name, execution_number FROM job_executions
             WHERE job_id = $1 AND NOT released AND status = 'QUEUED'
             ORDER BY queued_at, thing_name COLLATE "C" LIMIT $2)
         RETURNING thing_name`,
      [jobId, limit],
    );
    return rows.map((r) => r.thing_name);
  }

  hasUnreleased(jobId: string): Promise<boolean> {
    return this.exists(
      "SELECT 1 FROM job_executions WHERE job_id = $1 AND NOT released AND status = 'QUEUED' LIMIT 1",
      [jobId],
    );
  }

  async setRolloutWindow(jobId: string, start: number, count: number, nextAt: number | null): Promise<void> {
    await this.run(
      "UPDATE thing_jobs SET rollout_window_start = $1, rollout_window_count = $2, rollout_next_at = $3 WHERE job_id = $4",
      [start, count, nextAt, jobId],
    );
  }

  // ---- timers ----

  async nextDue(): Promise<number | undefined> {
    const [row] = await this.rows<{ due: number | null }>(
      `SELECT least((SELECT min(timeout_at) FROM job_executions WHERE timeout_at IS NOT NULL),
                    (SELECT min(rollout_next_at) FROM thing_jobs WHERE rollout_next_at IS NOT NULL)) AS due`,
    );
    return row?.due ?? undefined;
  }

  // The timers' work is claimed FOR UPDATE SKIP LOCKED: rows another process is handling are left to it.

  dueRollouts(now: number): Promise<StoredJob[]> {
    return this.rows<StoredJob>(
      `SELECT ${JOB} FROM thing_jobs WHERE rollout_next_at IS NOT NULL AND rollout_next_at <= $1
         AND status = 'IN_PROGRESS' FOR UPDATE SKIP LOCKED`,
      [now],
    );
  }

  lateExecutions(now: number): Promise<StoredExecution[]> {
    return this.rows<StoredExecution>(
      `SELECT ${EXECUTION} FROM job_executions WHERE timeout_at IS NOT NULL AND timeout_at <= $1
         AND status = 'IN_PROGRESS' FOR UPDATE SKIP LOCKED`,
      [now],
    );
  }

  // ---- retention ----

  pruneFinished(before: number, limit: number): Promise<number> {
    return this.run(
      `DELETE FROM job_executions WHERE (job_id, thing_name, execution_number) IN (
           SELECT job_id, thing_name, execution_number FROM job_executions
             WHERE status IN (${FINISHED_SQL}) AND last_updated_at < $1 ORDER BY last_updated_at LIMIT $2)`,
      [before, limit],
    );
  }
}
