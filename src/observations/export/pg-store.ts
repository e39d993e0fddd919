import type { PgPool } from "../../store/index.js";
import type { ExecutionClaim, ExecutionProgress, ExportPage, ExportStore, StoredJob } from "./store.js";
import type { ExecutionStatus, ExportExecution, ExportJob, ListQuery } from "./types.js";

interface PgJobRow {
  seq: string;
  id: string;
  owner: string;
  job: ExportJob;
  next_fire: Date | null;
}

interface PgExecutionRow {
  seq: string;
  id: string;
  job_id: string;
  owner: string;
  status: ExecutionStatus;
  submission: Date;
  completion: Date | null;
  data_scanned: string;
  engine_ms: string;
  file_name: string;
  window_from: Date;
  window_to: Date;
}

const at = (ms: number | null): Date | null => (ms === null ? null : new Date(ms));

/**
 * Export jobs and executions in PostgreSQL (`exportPgMigrations`), for processes of a cluster
 * sharing one database; pages are keyset pages on the creation sequence.
 */
export class PgExportStore implements ExportStore {
  constructor(private readonly pool: PgPool) {}

  async insertJob(owner: string, job: ExportJob, nextFire: number | null): Promise<void> {
    await this.pool.query("INSERT INTO export_jobs (id, owner, job, next_fire) VALUES ($1, $2, $3, $4)", [
      job.id,
      owner,
      JSON.stringify(job),
      at(nextFire),
    ]);
  }

  async updateJob(job: ExportJob, nextFire: number | null): Promise<void> {
    await this.pool.query("UPDATE export_jobs SET job = $1, next_fire = $2 WHERE id = $3", [
      JSON.stringify(job),
      at(nextFire),
      job.id,
    ]);
  }

  async setNextFire(id: string, nextFire: number | null): Promise<void> {
    await this.pool.query("UPDATE export_jobs SET next_fire = $1 WHERE id = $2", [at(nextFire), id]);
  }

  async job(id: string): Promise<StoredJob | undefined> {
    const { rows } = await this.pool.query<PgJobRow>("SELECT * FROM export_jobs WHERE id = $1", [id]);
    return rows[0] && toStoredJob(rows[0]);
  }

  async dueJobs(now: number): Promise<StoredJob[]> {
    const { rows } = await this.pool.query<PgJobRow>(
      "SELECT * FROM export_jobs WHERE next_fire IS NOT NULL AND next_fire <= $1 ORDER BY next_fire",
      [new Date(now)],
    );
    return rows.map(toStoredJob);
  }

  async jobs(owner: string, q: ListQuery): Promise<ExportPage<ExportJob>> {
    const page = await this.page<PgJobRow>("export_jobs", "owner = $1", [owner], q);
    return { ...page, items: page.items.map((r) => r.job) };
  }

  async deleteJob(id: string): Promise<void> {
    // One statement: the executions and the job go together.
    await this.pool.query(
      "WITH executions AS (DELETE FROM export_executions WHERE job_id = $1) DELETE FROM export_jobs WHERE id = $1",
      [id],
    );
  }

  async insertExecution(e: Omit<ExportExecution, "seq">, claim: ExecutionClaim): Promise<void> {
    await this.pool.query(
      `INSERT INTO export_executions (id, job_id, owner, status, submission, completion, data_scanned, engine_ms,
         file_name, window_from, window_to, claimed_by, lease_until)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
      [
        e.id,
        e.jobId,
        e.owner,
        e.status,
        e.submissionDateTime,
        e.completionDateTime === "" ? null : e.completionDateTime,
        e.dataScannedInBytes,
        e.engineExecutionTimeInMillis,
        e.executionFileName,
        new Date(e.windowFrom),
        new Date(e.windowTo),
        claim.holder,
        new Date(claim.until),
      ],
    );
  }

  async execution(id: string): Promise<ExportExecution | undefined> {
    const { rows } = await this.pool.query<PgExecutionRow>("SELECT * FROM export_executions WHERE id = $1", [id]);
    return rows[0] && toExecution(rows[0]);
  }

  async executions(owner: string, jobId: string | undefined, q: ListQuery): Promise<ExportPage<ExportExecution>> {
    const page =
      jobId === undefined
        ? await this.page<PgExecutionRow>("export_executions", "owner = $1", [owner], q)
        : await this.page<PgExecutionRow>("export_executions", "owner = $1 AND job_id = $2", [owner, jobId], q);
    return { ...page, items: page.items.map(toExecution) };
  }

  async executionsOfJob(jobId: string): Promise<ExportExecution[]> {
    const { rows } = await this.pool.query<PgExecutionRow>("SELECT * FROM export_executions WHERE job_id = $1", [
      jobId,
    ]);
    return rows.map(toExecution);
  }

  async openExecutions(now: number): Promise<ExportExecution[]> {
    const { rows } = await this.pool.query<PgExecutionRow>(
      `SELECT * FROM export_executions WHERE status IN ('QUEUED', 'RUNNING')
         AND (claimed_by IS NULL OR lease_until <= $1) ORDER BY seq`,
      [new Date(now)],
    );
    return rows.map(toExecution);
  }

  async claimExecution(id: string, claim: ExecutionClaim, now: number): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      `UPDATE export_executions SET status = 'RUNNING', claimed_by = $2, lease_until = $3
       WHERE id = $1 AND status IN ('QUEUED', 'RUNNING') AND (claimed_by IS NULL OR claimed_by = $2 OR lease_until <= $4)`,
      [id, claim.holder, new Date(claim.until), new Date(now)],
    );
    return rowCount === 1;
  }

  async renewExecutionClaims(holder: string, until: number): Promise<string[]> {
    const { rows } = await this.pool.query<{ id: string }>(
      `UPDATE export_executions SET lease_until = $2 WHERE claimed_by = $1 AND status IN ('QUEUED', 'RUNNING') RETURNING id`,
      [holder, new Date(until)],
    );
    return rows.map((r) => r.id);
  }

  async transition(id: string, to: ExecutionStatus, fields: ExecutionProgress = {}): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      `UPDATE export_executions SET status = $1, completion = coalesce($2, completion),
         data_scanned = coalesce($3, data_scanned), engine_ms = coalesce($4, engine_ms)
       WHERE id = $5 AND status <> 'CANCELLED'`,
      [to, fields.completion ?? null, fields.dataScanned ?? null, fields.engineMs ?? null, id],
    );
    return rowCount === 1;
  }

  async holdScheduleLease(holder: string, now: number, ttlMs: number): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      `INSERT INTO export_schedule_lease (one, holder, expires_at) VALUES (1, $1, $2)
       ON CONFLICT (one) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
       WHERE export_schedule_lease.holder = excluded.holder OR export_schedule_lease.expires_at <= $3`,
      [holder, new Date(now + ttlMs), new Date(now)],
    );
    return rowCount === 1;
  }

  private async page<R extends { seq: string }>(
    table: string,
    where: string,
    args: unknown[],
    q: ListQuery,
  ): Promise<ExportPage<R>> {
    const params = [...args];
    const marker = q.marker === undefined ? "" : ` AND seq ${q.order === "asc" ? ">" : "<"} $${params.push(q.marker)}`;
    const limit = `$${params.push(q.size + 1)}`;
    const order = q.order === "asc" ? "ASC" : "DESC";
    const { rows } = await this.pool.query<R>(
      `SELECT * FROM ${table} WHERE ${where}${marker} ORDER BY seq ${order} LIMIT ${limit}`,
      params,
    );
    const items = rows.slice(0, q.size);
    const last = items[items.length - 1]?.seq;
    return { items, last: last === undefined ? undefined : Number(last), hasNext: rows.length > q.size };
  }
}

function toStoredJob(r: PgJobRow): StoredJob {
  return { job: r.job, owner: r.owner, nextFire: r.next_fire?.getTime() ?? null };
}

function toExecution(r: PgExecutionRow): ExportExecution {
  return {
    id: r.id,
    jobId: r.job_id,
    owner: r.owner,
    status: r.status,
    submissionDateTime: r.submission.toISOString(),
    completionDateTime: r.completion?.toISOString() ?? "",
    dataScannedInBytes: Number(r.data_scanned),
    engineExecutionTimeInMillis: Number(r.engine_ms),
    executionFileName: r.file_name,
    windowFrom: r.window_from.getTime(),
    windowTo: r.window_to.getTime(),
    seq: Number(r.seq),
  };
}
