import { convert, type Convert } from "./convert.js";

/**
 * A table of `dms.sqlite` and its PostgreSQL counterpart of the same name and columns: each
 * PostgreSQL column and how its SQLite value becomes the value that column takes (read from both
 * migration sets: src/migrations.ts and each capability's `*PgMigrations`).
 */
export interface TableCopy {
  table: string;
  columns: Readonly<Record<string, Convert>>;
  /** The column PostgreSQL generates (GENERATED ALWAYS AS IDENTITY): its sequence is moved past the copied ids. */
  identity?: string;
}

const { same, msToTime, isoToMs, flag, isoOrEmpty } = convert;
/** ISO 8601 text into TIMESTAMPTZ: PostgreSQL reads the text as it is. */
const iso = same;

/** The tables of `dms.sqlite` copied row for row, parents before the tables whose foreign keys name them. */
export const TABLES: readonly TableCopy[] = [
  // identity (src/auth/migrations.ts)
  {
    table: "domains",
    columns: { id: same, parent: same, label: same, path: same, created_at: iso, updated_at: iso },
  },
  {
    table: "users",
    columns: {
      user_name: same,
      password_hash: same,
      role: same,
      home_domain: same,
      email: same,
      created_at: iso,
      updated_at: iso,
    },
  },
  { table: "user_privileges", columns: { user_name: same, domain: same, privilege: same } },
  {
    table: "api_keys",
    columns: { id: same, key_hash: same, label: same, created_at: iso, public_key: same },
  },
  {
    // Epoch ms on both sides.
    table: "refresh_tokens",
    columns: { jti: same, family: same, user_name: same, expires_at: same, used_at: same, revoked_at: same },
  },
  // things (src/things/migrations.ts)
  {
    table: "thing_types",
    columns: { id: same, label: same, domain: same, created_at: iso, updated_at: iso },
  },
  {
    table: "thing_type_resources",
    columns: { thing_type: same, name: same, data_type: same, resource_type: same },
  },
  {
    table: "things",
    columns: {
      thing_name: same,
      thing_type: same,
      domain: same,
      serial: same,
      secret_hash: same,
      label: same,
      created_at: iso,
      updated_at: iso,
    },
  },
  {
    table: "thing_groups",
    columns: { id: same, name: same, domain: same, created_at: iso, updated_at: iso },
  },
  { table: "thing_group_members", columns: { group_id: same, thing_name: same, added_at: iso } },
  { table: "thing_provisions", columns: { thing_name: same, digest: same } },
  // file metadata (src/files/migrations.ts); the contents follow from files/ (file-contents.ts)
  {
    table: "file_versions",
    identity: "seq",
    columns: {
      seq: same,
      key: same,
      version_id: same,
      size: same,
      md5: same,
      content_type: same,
      content_encoding: same,
      content_disposition: same,
      last_modified: msToTime,
    },
  },
  { table: "file_objects", columns: { key: same, folder: same, owner: same, name: same, seq: same } },
  // rules (src/rules/migrations.ts); the id sequence is a table on SQLite, a sequence on PostgreSQL
  {
    table: "rules",
    columns: {
      id: same,
      domain: same,
      thing_type: same,
      enabled: flag,
      doc: same,
      created_at: iso,
      updated_at: iso,
    },
  },
  // the outbox (src/actions/migrations.ts): epoch ms on both sides
  {
    table: "action_outbox",
    identity: "id",
    columns: {
      id: same,
      idempotency_key: same,
      rule_id: same,
      rule_domain: same,
      thing_name: same,
      type: same,
      config: same,
      payload: same,
      status: same,
      attempts: same,
      next_attempt_at: same,
      last_error: same,
      created_at: same,
      updated_at: same,
      claimed_by: same,
      lease_until: same,
    },
  },
  // events (src/events/migrations.ts)
  {
    table: "events",
    identity: "id",
    columns: {
      id: same,
      idempotency_key: same,
      rule_id: same,
      category: same,
      thing_name: same,
      thing_type: same,
      domain: same,
      classification: same,
      message: same,
      acknowledgment_required: flag,
      acknowledged_at: msToTime,
      acknowledged_by: same,
      ts: msToTime,
    },
  },
  // the engine (src/engine/dead-letters/migrations.ts, src/engine/state)
  {
    table: "engine_dead_letters",
    identity: "id",
    columns: {
      id: same,
      source: same,
      partition: same,
      offset: same,
      thing_name: same,
      domain: same,
      reason: same,
      message: same,
      payload: same,
      created_at: msToTime,
    },
  },
  {
    table: "engine_thing_state",
    columns: { thing_name: same, ts: same, seq: same, last_source: same, last_offset: same, doc: same },
  },
  // exports (src/observations/export/migrations.ts)
  {
    table: "export_jobs",
    identity: "seq",
    columns: { seq: same, id: same, owner: same, job: same, next_fire: msToTime },
  },
  {
    table: "export_executions",
    identity: "seq",
    columns: {
      seq: same,
      id: same,
      job_id: same,
      owner: same,
      status: same,
      submission: iso,
      completion: isoOrEmpty,
      data_scanned: same,
      engine_ms: same,
      file_name: same,
      window_from: msToTime,
      window_to: msToTime,
      claimed_by: same,
      lease_until: msToTime,
    },
  },
  // thing jobs (src/jobs/migrations.ts): job and document times are ISO text on SQLite, epoch ms on PostgreSQL
  {
    table: "job_documents",
    columns: {
      document_id: same,
      document_name: same,
      domain: same,
      content: same,
      created_at: isoToMs,
      upload_expires_at: same,
      uploaded_at: isoToMs,
    },
  },
  {
    table: "thing_jobs",
    columns: {
      job_id: same,
      domain: same,
      description: same,
      comment: same,
      status: same,
      target_selection: same,
      document_id: same,
      target_things: same,
      created_at: isoToMs,
      last_updated_at: isoToMs,
      completed_at: isoToMs,
      canceled_at: isoToMs,
      maximum_per_minute: same,
      in_progress_timeout_minutes: same,
      abort_config: same,
      rollout_window_start: same,
      rollout_window_count: same,
      rollout_next_at: same,
    },
  },
  {
    table: "thing_job_groups",
    columns: { job_id: same, group_id: same, group_name: same, position: same },
  },
  {
    table: "job_executions",
    columns: {
      job_id: same,
      thing_name: same,
      execution_number: same,
      status: same,
      released: flag,
      queued_at: same,
      started_at: same,
      last_updated_at: same,
      version_number: same,
      status_details: same,
      force_canceled: flag,
      in_progress_deadline: same,
      step_deadline: same,
      timeout_at: same,
    },
  },
];

/** Tables of `dms.sqlite` not copied row for row, and why. */
export const SQLITE_NOT_COPIED: Readonly<Record<string, string>> = {
  schema_migrations: "each database records its own migrations",
  rule_id_sequence: "its value moves the PostgreSQL sequence of the same name",
  bus_events: "the change log running processes follow; a new deployment starts with an empty one",
  export_schedule_lease: "the lease of a scheduler that has stopped",
};

/** Tables of `observations.sqlite` that are not observations, and what becomes of them. */
export const OBSERVATION_FILE_TABLES: Readonly<Record<string, string>> = {
  schema_migrations: "each database records its own migrations",
  observation_partitions: "the catalog of day tables: PostgreSQL's partitions are made for the same days",
  observation_columns: "the column cache of closed days, which PostgreSQL does without",
  observation_ids: "its value moves the PostgreSQL sequence observation_ids",
  observation_marks: "copied row for row",
};

/** PostgreSQL tables filled from elsewhere than a `dms.sqlite` table of the same name, or left empty. */
export const PG_OTHER_TABLES: Readonly<Record<string, string>> = {
  schema_migrations: "written by the migrations",
  file_chunks: "the contents of files/objects",
  service_keys: "the key files of the data directory",
  observations: "the day tables of observations.sqlite",
  observation_marks: "observations.sqlite's table",
  bus_events: "left empty",
  export_schedule_lease: "left empty",
  export_files: "left empty: export files stay in the data directory's exports/ (docs/storage.md)",
  export_file_chunks: "left empty, as export_files",
};
