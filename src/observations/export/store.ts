import type { Db, Migration } from "../../store/index.js";
import type { ExecutionStatus, ExportExecution, ExportJob, ListQuery } from "./types.js";

export const exportMigrations: Migration[] = [
  {
    id: "observations-002-export",
    up: `
      CREATE TABLE export_jobs (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        owner TEXT NOT NULL,
        job TEXT NOT NULL,
        -- Scheduled jobs: the next fire time (epoch ms) while enabled, else NULL.
        next_fire INTEGER
      );
      CREATE INDEX export_jobs_owner ON export_jobs(owner, seq);
      CREATE INDEX export_jobs_next_fire ON export_jobs(next_fire) WHERE next_fire IS NOT NULL;
      CREATE TABLE export_executions (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        job_id TEXT NOT NULL,
        owner TEXT NOT NULL,
        status TEXT NOT NULL,
        submission TEXT NOT NULL,
        completion TEXT NOT NULL DEFAULT '',
        data_scanned INTEGER NOT NULL DEFAULT 0,
        engine_ms INTEGER NOT NULL DEFAULT 0,
        file_name TEXT NOT NULL,
        window_from INTEGER NOT NULL,
        window_to INTEGER NOT NULL
      );
      CREATE INDEX export_executions_owner ON export_executions(owner, seq);
      CREATE INDEX export_executions_job ON export_executions(job_id, seq);
      CREATE INDEX export_executions_open ON export_executions(status) WHERE status IN ('QUEUED', 'RUNNING');
    `,
  },
];

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

export interface StoredJob {
  job: ExportJob;
  owner: string;
  nextFire: number | null;
}

/** Export jobs and executions in SQLite; pages are keyset pages on the creation sequence. */
export class ExportStore {
  constructor(private readonly db: Db) {}

  insertJob(owner: string, job: ExportJob, nextFire: number | null): void {
    this.db
      .prepare("INSERT INTO export_jobs (id, owner, job, next_fire) VALUES (?, ?, ?, ?)")
      .run(job.id, owner, JSON.stringify(job), nextFire);
  }

  updateJob(job: ExportJob, nextFire: number | null): void {
    this.db
      .prepare("UPDATE export_jobs SET job = ?, next_fire = ? WHERE id = ?")
      .run(JSON.stringify(job), nextFire, job.id);
  }

  setNextFire(id: string, nextFire: number | null): void {
    this.db.prepare("UPDATE export_jobs SET next_fire = ? WHERE id = ?").run(nextFire, id);
  }

  job(id: string): StoredJob | undefined {
    const row = this.db.prepare<[string], JobRow>("SELECT * FROM export_jobs WHERE id = ?").get(id);
    return row && { job: JSON.parse(row.job) as ExportJob, owner: row.owner, nextFire: row.next_fire };
  }

  dueJobs(now: number): StoredJob[] {
    return this.db
      .prepare<[number], JobRow>(
        "SELECT * FROM export_jobs WHERE next_fire IS NOT NULL AND next_fire <= ? ORDER BY next_fire",
      )
      .all(now)
      .map((row) => ({ job: JSON.parse(row.job) as ExportJob, owner: row.owner, nextFire: row.next_fire }));
  }

  /** Earliest scheduled fire, so the scheduler knows how long it may sleep. */
  jobs(owner: string, q: ListQuery): { items: ExportJob[]; last: number | undefined; hasNext: boolean } {
    const rows = this.page<JobRow>("export_jobs", "owner = ?", [owner], q);
    return { items: rows.items.map((r) => JSON.parse(r.job) as ExportJob), last: rows.last, hasNext: rows.hasNext };
  }

  deleteJob(id: string): void {
    this.db.transaction(() => {
      this.db.prepare("DELETE FROM export_executions WHERE job_id = ?").run(id);
      this.db.prepare("DELETE FROM export_jobs WHERE id = ?").run(id);
    })();
  }

  insertExecution(e: Omit<ExportExecution, "seq">): void {
    this.db
      .prepare(
        `INSERT INTO export_executions (id, job_id, owner, status, submission, completion, data_scanned, engine_ms, file_name, window_from, window_to)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
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
      );
  }

  execution(id: string): ExportExecution | undefined {
    const row = this.db.prepare<[string], ExecutionRow>("SELECT * FROM export_executions WHERE id = ?").get(id);
    return row && toExecution(row);
  }

  executions(
    owner: string,
    jobId: string | undefined,
    q: ListQuery,
  ): { items: ExportExecution[]; last: number | undefined; hasNext: boolean } {
    const rows =
      jobId === undefined
        ? this.page<ExecutionRow>("export_executions", "owner = ?", [owner], q)
        : this.page<ExecutionRow>("export_executions", "owner = ? AND job_id = ?", [owner, jobId], q);
    return { items: rows.items.map(toExecution), last: rows.last, hasNext: rows.hasNext };
  }

  executionsOfJob(jobId: string): ExportExecution[] {
    return this.db
      .prepare<[string], ExecutionRow>("SELECT * FROM export_executions WHERE job_id = ?")
      .all(jobId)
      .map(toExecution);
  }

  openExecutions(): ExportExecution[] {
    return this.db
      .prepare<[], ExecutionRow>("SELECT * FROM export_executions WHERE status IN ('QUEUED', 'RUNNING') ORDER BY seq")
      .all()
      .map(toExecution);
  }

  /** Moves an execution on, unless it was cancelled meanwhile; answers whether it moved. */
  transition(
    id: string,
    to: ExecutionStatus,
    fields: { completion?: string; dataScanned?: number; engineMs?: number } = {},
  ): boolean {
    const r = this.db
      .prepare(
        `UPDATE export_executions SET status = ?, completion = coalesce(?, completion),
           data_scanned = coalesce(?, data_scanned), engine_ms = coalesce(?, engine_ms)
         WHERE id = ? AND status != 'CANCELLED'`,
      )
      .run(to, fields.completion ?? null, fields.dataScanned ?? null, fields.engineMs ?? null, id);
    return r.changes === 1;
  }

  private page<R extends { seq: number }>(
    table: string,
    where: string,
    args: unknown[],
    q: ListQuery,
  ): { items: R[]; last: number | undefined; hasNext: boolean } {
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
