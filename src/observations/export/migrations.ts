import type { Migration, PgMigration } from "../../store/index.js";

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
  {
    // One row: which scheduler fires the export schedules, until when (epoch ms) unless it renews.
    id: "observations-003-export-lease",
    up: `
      CREATE TABLE export_schedule_lease (
        one INTEGER PRIMARY KEY CHECK (one = 1),
        holder TEXT NOT NULL,
        expires_at INTEGER NOT NULL
      );
    `,
  },
  {
    // Which runner an open execution is for, until when (epoch ms): see ExecutionClaim.
    id: "observations-005-export-claims",
    up: `
      ALTER TABLE export_executions ADD COLUMN claimed_by TEXT;
      ALTER TABLE export_executions ADD COLUMN lease_until INTEGER NOT NULL DEFAULT 0;
    `,
  },
];

/**
 * The same tables for `PgExportStore`: times are TIMESTAMPTZ (an execution not completed has no
 * completion, read back as the empty string SQLite keeps), the job its JSON as written.
 */
export const exportPgMigrations: PgMigration[] = [
  {
    id: "observations-002-export",
    up: `
      CREATE TABLE export_jobs (
        seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        owner TEXT NOT NULL,
        job JSON NOT NULL,
        -- Scheduled jobs: the next fire time while enabled, else NULL.
        next_fire TIMESTAMPTZ
      );
      CREATE INDEX export_jobs_owner ON export_jobs(owner, seq);
      CREATE INDEX export_jobs_next_fire ON export_jobs(next_fire) WHERE next_fire IS NOT NULL;
      CREATE TABLE export_executions (
        seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        job_id TEXT NOT NULL,
        owner TEXT NOT NULL,
        status TEXT NOT NULL,
        submission TIMESTAMPTZ NOT NULL,
        completion TIMESTAMPTZ,
        data_scanned BIGINT NOT NULL DEFAULT 0,
        engine_ms BIGINT NOT NULL DEFAULT 0,
        file_name TEXT NOT NULL,
        window_from TIMESTAMPTZ NOT NULL,
        window_to TIMESTAMPTZ NOT NULL
      );
      CREATE INDEX export_executions_owner ON export_executions(owner, seq);
      CREATE INDEX export_executions_job ON export_executions(job_id, seq);
      CREATE INDEX export_executions_open ON export_executions(status) WHERE status IN ('QUEUED', 'RUNNING');
    `,
  },
  {
    id: "observations-003-export-lease",
    up: `
      CREATE TABLE export_schedule_lease (
        one INTEGER PRIMARY KEY CHECK (one = 1),
        holder TEXT NOT NULL,
        expires_at TIMESTAMPTZ NOT NULL
      );
    `,
  },
  {
    // Export files (`PgExportFiles`): the bytes of each write as chunks, and which write is each execution's file.
    id: "observations-004-export-files",
    up: `
      CREATE TABLE export_file_chunks (
        write_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        data BYTEA NOT NULL,
        written_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        PRIMARY KEY (write_id, seq)
      );
      -- Gzip already: no TOAST compression of it.
      ALTER TABLE export_file_chunks ALTER COLUMN data SET STORAGE EXTERNAL;
      CREATE TABLE export_files (
        execution_id TEXT PRIMARY KEY,
        write_id TEXT NOT NULL,
        size BIGINT NOT NULL
      );
      CREATE INDEX export_files_write ON export_files(write_id);
    `,
  },
  {
    id: "observations-005-export-claims",
    up: `
      ALTER TABLE export_executions ADD COLUMN claimed_by TEXT,
        ADD COLUMN lease_until TIMESTAMPTZ NOT NULL DEFAULT 'epoch';
    `,
  },
];
