import type { Migration, PgMigration } from "../store/index.js";
import { TERMINAL } from "./types.js";

/** The statuses of a finished execution, as an SQL list: retention's condition and its index's must match. */
export const FINISHED_SQL = [...TERMINAL].map((s) => `'${s}'`).join(", ");

export const jobsMigrations: Migration[] = [
  {
    id: "jobs-001-thing-jobs",
    up: `
      CREATE TABLE job_documents (
        document_id TEXT PRIMARY KEY,
        document_name TEXT NOT NULL,
        domain TEXT NOT NULL,
        content TEXT,
        created_at TEXT NOT NULL,
        upload_expires_at INTEGER NOT NULL,
        uploaded_at TEXT
      );
      CREATE TABLE thing_jobs (
        job_id TEXT PRIMARY KEY,
        domain TEXT NOT NULL,
        description TEXT NOT NULL,
        comment TEXT,
        status TEXT NOT NULL,
        target_selection TEXT NOT NULL,
        document_id TEXT NOT NULL REFERENCES job_documents(document_id),
        target_things TEXT NOT NULL,
        created_at TEXT NOT NULL,
        last_updated_at TEXT NOT NULL,
        completed_at TEXT,
        canceled_at TEXT,
        maximum_per_minute INTEGER,
        in_progress_timeout_minutes INTEGER,
        abort_config TEXT,
        -- rollout: the current one-minute window and how many executions it released
        rollout_window_start INTEGER NOT NULL DEFAULT 0,
        rollout_window_count INTEGER NOT NULL DEFAULT 0,
        rollout_next_at INTEGER
      );
      CREATE INDEX thing_jobs_domain ON thing_jobs(domain);
      CREATE INDEX thing_jobs_rollout ON thing_jobs(rollout_next_at) WHERE rollout_next_at IS NOT NULL;
      CREATE TABLE thing_job_groups (
        job_id TEXT NOT NULL REFERENCES thing_jobs(job_id) ON DELETE CASCADE,
        group_id TEXT NOT NULL,
        group_name TEXT NOT NULL,
        position INTEGER NOT NULL,
        PRIMARY KEY (job_id, group_id)
      );
      CREATE INDEX thing_job_groups_group ON thing_job_groups(group_id);
      CREATE TABLE job_executions (
        job_id TEXT NOT NULL REFERENCES thing_jobs(job_id) ON DELETE CASCADE,
        thing_name TEXT NOT NULL,
        execution_number INTEGER NOT NULL,
        status TEXT NOT NULL,
        -- 0 while the rollout has not reached it: QUEUED but not yet offered to the device
        released INTEGER NOT NULL,
        queued_at INTEGER NOT NULL,
        started_at INTEGER,
        last_updated_at INTEGER NOT NULL,
        version_number INTEGER NOT NULL,
        status_details TEXT,
        force_canceled INTEGER NOT NULL DEFAULT 0,
        in_progress_deadline INTEGER,
        step_deadline INTEGER,
        timeout_at INTEGER,
        PRIMARY KEY (job_id, thing_name, execution_number)
      );
      CREATE INDEX job_executions_thing ON job_executions(thing_name, status);
      CREATE INDEX job_executions_job_status ON job_executions(job_id, status);
      CREATE INDEX job_executions_unreleased ON job_executions(job_id, queued_at) WHERE released = 0;
      CREATE INDEX job_executions_timeout ON job_executions(timeout_at) WHERE timeout_at IS NOT NULL;
    `,
  },
  {
    // Retention (DMS_JOB_EXECUTION_RETENTION) deletes finished executions, the longest finished first.
    id: "jobs-002-finished-executions",
    up: `CREATE INDEX job_executions_finished ON job_executions(last_updated_at)
           WHERE status IN (${FINISHED_SQL});`,
  },
];

/**
 * Thing jobs in PostgreSQL: the same tables, times as epoch ms (BIGINT), flags as BOOLEAN and
 * JSON kept as the text written (json, not jsonb, so keys stay in their order).
 */
export const jobsPgMigrations: PgMigration[] = [
  {
    id: "jobs-001-thing-jobs",
    up: `
      CREATE TABLE job_documents (
        document_id TEXT PRIMARY KEY,
        document_name TEXT NOT NULL,
        domain TEXT NOT NULL,
        content TEXT,
        created_at BIGINT NOT NULL,
        upload_expires_at BIGINT NOT NULL,
        uploaded_at BIGINT
      );
      CREATE TABLE thing_jobs (
        job_id TEXT PRIMARY KEY,
        domain TEXT NOT NULL,
        description TEXT NOT NULL,
        comment TEXT,
        status TEXT NOT NULL,
        target_selection TEXT NOT NULL,
        document_id TEXT NOT NULL REFERENCES job_documents(document_id),
        target_things JSON NOT NULL,
        created_at BIGINT NOT NULL,
        last_updated_at BIGINT NOT NULL,
        completed_at BIGINT,
        canceled_at BIGINT,
        maximum_per_minute INTEGER,
        in_progress_timeout_minutes INTEGER,
        abort_config JSON,
        rollout_window_start BIGINT NOT NULL DEFAULT 0,
        rollout_window_count INTEGER NOT NULL DEFAULT 0,
        rollout_next_at BIGINT
      );
      CREATE INDEX thing_jobs_domain ON thing_jobs(domain);
      CREATE INDEX thing_jobs_rollout ON thing_jobs(rollout_next_at) WHERE rollout_next_at IS NOT NULL;
      CREATE TABLE thing_job_groups (
        job_id TEXT NOT NULL REFERENCES thing_jobs(job_id) ON DELETE CASCADE,
        group_id TEXT NOT NULL,
        group_name TEXT NOT NULL,
        position INTEGER NOT NULL,
        PRIMARY KEY (job_id, group_id)
      );
      CREATE INDEX thing_job_groups_group ON thing_job_groups(group_id);
      CREATE TABLE job_executions (
        job_id TEXT NOT NULL REFERENCES thing_jobs(job_id) ON DELETE CASCADE,
        thing_name TEXT NOT NULL,
        execution_number INTEGER NOT NULL,
        status TEXT NOT NULL,
        released BOOLEAN NOT NULL,
        queued_at BIGINT NOT NULL,
        started_at BIGINT,
        last_updated_at BIGINT NOT NULL,
        version_number INTEGER NOT NULL,
        status_details JSON,
        force_canceled BOOLEAN NOT NULL DEFAULT false,
        in_progress_deadline BIGINT,
        step_deadline BIGINT,
        timeout_at BIGINT,
        PRIMARY KEY (job_id, thing_name, execution_number)
      );
      CREATE INDEX job_executions_thing ON job_executions(thing_name, status);
      CREATE INDEX job_executions_job_status ON job_executions(job_id, status);
      CREATE INDEX job_executions_unreleased ON job_executions(job_id, queued_at) WHERE NOT released;
      CREATE INDEX job_executions_timeout ON job_executions(timeout_at) WHERE timeout_at IS NOT NULL;
      CREATE INDEX job_executions_finished ON job_executions(last_updated_at) WHERE status IN (${FINISHED_SQL});
    `,
  },
];
