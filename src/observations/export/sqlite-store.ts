import type { Db } from "../../store/index.js";
import type { ExecutionClaim, ExecutionProgress, ExportPage, ExportStore, StoredJob } from "./store.js";
import type { ExecutionStatus, ExportExecution, ExportJob, ListQuery } from "./types.js";

interface JobRow {
  seq: number;
  id: string;
  owner: string;
  job: string;
  next_fire: number | null;
}

interface ExecutionRow {
  seq: number;
  id: string;
  job_id: string;
  owner: string;
  status: ExecutionStatus;
  submission: string;
  completion: string;
  data_scanned: number;
  engine_ms: number;
  file_name: string;
  window_from: number;
  window_to: number;
}

/** Export jobs and executions in the process's SQLite database (`exportMigrations`); pages are keyset pages on the creation sequence. */
export class SqliteExportStore implements ExportStore {
  constructor(private readonly db: Db) {}

  async insertJob(owner: string, job: ExportJob, nextFire: number | null): Promise<void> {
    this.db
      .prepare("INSERT INTO export_jobs (id, owner, job, next_fire) VALUES (?, ?, ?, ?)")
      .run(job.id, owner, JSON.stringify(job), nextFire);
  }

  async updateJob(job: ExportJob, nextFire: number | null): Promise<void> {
    this.db
      .prepare("UPDATE export_jobs SET job = ?, next_fire = ? WHERE id = ?")
      .run(JSON.stringify(job), nextFire, job.id);
  }

  async setNextFire(id: string, nextFire: number | null): Promise<void> {
    this.db.prepare("UPDATE export_jobs SET next_fire = ? WHERE id = ?").run(nextFire, id);
  }

  async job(id: string): Promise<StoredJob | undefined> {
    const row = this.db.prepare<[string], JobRow>("SELECT * FROM export_jobs WHERE id = ?").get(id);
    return row && { job: JSON.parse(row.job) as ExportJob, owner: row.owner, nextFire: row.next_fire };
  }

  async dueJobs(now: number): Promise<StoredJob[]> {
    return this.db
      .prepare<[number], JobRow>(
        "SELECT * FROM export_jobs WHERE next_fire IS NOT NULL AND next_fire <= ? ORDER BY next_fire",
      )
      .all(now)
      .map((row) => ({ job: JSON.parse(row.job) as ExportJob, owner: row.owner, nextFire: row.next_fire }));
  }

  async jobs(owner: string, q: ListQuery): Promise<ExportPage<ExportJob>> {
    const rows = this.page<JobRow>("export_jobs", "owner = ?", [owner], q);
    return { items: rows.items.map((r) => JSON.parse(r.job) as ExportJob), last: rows.last, hasNext: rows.hasNext };
  }

  async deleteJob(id: string): Promise<void> {
    this.db.transaction(() => {
      this.db.prepare("DELETE FROM export_executions WHERE job_id = ?").run(id);
      this.db.prepare("DELETE FROM export_jobs WHERE id = ?").run(id);
    })();
  }

  async insertExecution(e: Omit<ExportExecution, "seq">, claim: ExecutionClaim): Promise<void> {
    this.db
      .prepare(
        `INSERT INTO export_executions (id, job_id, owner, status, submission, completion, data_scanned, engine_ms, file_name,
           window_from, window_to, claimed_by, lease_until)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(
        e.id,
        e.jobId,
        e.owner,
        e.status,
        e.submissionDateTime,
        e.completionDateTime,
        e.dataScannedInBytes,
        e.engineExecutionTimeInMillis,
        e.executionFileName,
        e.windowFrom,
        e.windowTo,
        claim.holder,
        claim.until,
      );
  }

  async execution(id: string): Promise<ExportExecution | undefined> {
    const row = this.db.prepare<[string], ExecutionRow>("SELECT * FROM export_executions WHERE id = ?").get(id);
    return row && toExecution(row);
  }

  async executions(owner: string, jobId: string | undefined, q: ListQuery): Promise<ExportPage<ExportExecution>> {
    const rows =
      jobId === undefined
        ? this.page<ExecutionRow>("export_executions", "owner = ?", [owner], q)
        : this.page<ExecutionRow>("export_executions", "owner = ? AND job_id = ?", [owner, jobId], q);
    return { items: rows.items.map(toExecution), last: rows.last, hasNext: rows.hasNext };
  }

  async executionsOfJob(jobId: string): Promise<ExportExecution[]> {
    return this.db
      .prepare<[string], ExecutionRow>("SELECT * FROM export_executions WHERE job_id = ?")
      .all(jobId)
      .map(toExecution);
  }

  async openExecutions(now: number): Promise<ExportExecution[]> {
    return this.db
      .prepare<[number], ExecutionRow>(
        `SELECT * FROM export_executions WHERE status IN ('QUEUED', 'RUNNING')
           AND (claimed_by IS NULL OR lease_until <= ?) ORDER BY seq`,
      )
      .all(now)
      .map(toExecution);
  }

  async claimExecution(id: string, claim: ExecutionClaim, now: number): Promise<boolean> {
    const { changes } = this.db
      .prepare(
        `UPDATE export_executions SET status = 'RUNNING', claimed_by = ?, lease_until = ?
         WHERE id = ? AND status IN ('QUEUED', 'RUNNING') AND (claimed_by IS NULL OR claimed_by = ? OR lease_until <= ?)`,
      )
      .run(claim.holder, claim.until, id, claim.holder, now);
    return changes === 1;
  }

  async renewExecutionClaims(holder: string, until: number): Promise<string[]> {
    return this.db
      .prepare<[number, string], { id: string }>(
        `UPDATE export_executions SET lease_until = ? WHERE claimed_by = ? AND status IN ('QUEUED', 'RUNNING') RETURNING id`,
      )
      .all(until, holder)
      .map((r) => r.id);
  }

  async transition(id: string, to: ExecutionStatus, fields: ExecutionProgress = {}): Promise<boolean> {
    const r = this.db
      .prepare(
        `UPDATE export_executions SET status = ?, completion = coalesce(?, completion),
           data_scanned = coalesce(?, data_scanned), engine_ms = coalesce(?, engine_ms)
         WHERE id = ? AND status != 'CANCELLED'`,
      )
      .run(to, fields.completion ?? null, fields.dataScanned ?? null, fields.engineMs ?? null, id);
    return r.changes === 1;
  }

  async holdScheduleLease(holder: string, now: number, ttlMs: number): Promise<boolean> {
    const { changes } = this.db
      .prepare(
        `INSERT INTO export_schedule_lease (one, holder, expires_at) VALUES (1, ?, ?)
         ON CONFLICT (one) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
         WHERE export_schedule_lease.holder = excluded.holder OR export_schedule_lease.expires_at <= ?`,
      )
      .run(holder, now + ttlMs, now);
    return changes === 1;
  }

  private page<R extends { seq: number }>(table: string, where: string, args: unknown[], q: ListQuery): ExportPage<R> {
    const cmp = q.order === "asc" ? ">" : "<";
    const marker = q.marker === undefined ? "" : ` AND seq ${cmp} ?`;
    const sql = `SELECT * FROM ${table} WHERE ${where}${marker} ORDER BY seq ${q.order} LIMIT ?`;
    const params = q.marker === undefined ? [...args, q.size + 1] : [...args, q.marker, q.size + 1];
    const rows = this.db.prepare(sql).all(...params) as R[];
    const hasNext = rows.length > q.size;
    const items = rows.slice(0, q.size);
    return { items, last: items[items.length - 1]?.seq, hasNext };
  }
}

function toExecution(r: ExecutionRow): ExportExecution {
  return {
    id: r.id,
    jobId: r.job_id,
    owner: r.owner,
    status: r.status,
    submissionDateTime: r.submission,
    completionDateTime: r.completion,
    dataScannedInBytes: r.data_scanned,
    engineExecutionTimeInMillis: r.engine_ms,
    executionFileName: r.file_name,
    windowFrom: r.window_from,
    windowTo: r.window_to,
    seq: r.seq,
  };
}
