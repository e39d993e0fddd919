import type { Migration, PgMigration } from "../store/index.js";

export const actionsMigrations: Migration[] = [
  {
    id: "actions-001-outbox",
    up: `
      CREATE TABLE action_outbox (
        id INTEGER PRIMARY KEY,
        idempotency_key TEXT NOT NULL,
        rule_id TEXT NOT NULL,
        -- The rule's domain, so dead letters are listed to those who may read the rule.
        rule_domain TEXT NOT NULL,
        thing_name TEXT NOT NULL,
        type TEXT NOT NULL,
        config TEXT NOT NULL,
        payload TEXT NOT NULL,
        -- pending -> delivering -> delivered | pending (retry) | dead
        status TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        next_attempt_at INTEGER NOT NULL,
        last_error TEXT,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      );
      -- A replayed observation hands the same actions again: the key drops them.
      CREATE UNIQUE INDEX action_outbox_key ON action_outbox(idempotency_key);
      CREATE INDEX action_outbox_due ON action_outbox(status, next_attempt_at);
    `,
  },
  {
    // A delivering delivery names its outbox and the end of its lease: a claim left without a lease
    // (made before leases) counts as ended.
    id: "actions-002-claim-lease",
    up: `
      ALTER TABLE action_outbox ADD COLUMN claimed_by TEXT;
      ALTER TABLE action_outbox ADD COLUMN lease_until INTEGER;
    `,
  },
];

/** The outbox in PostgreSQL: the same table, config and payload kept as the JSON text they were written as. */
export const actionsPgMigrations: PgMigration[] = [
  {
    id: "actions-001-outbox",
    up: `
      CREATE TABLE action_outbox (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        idempotency_key TEXT NOT NULL,
        rule_id TEXT NOT NULL,
        rule_domain TEXT NOT NULL,
        thing_name TEXT NOT NULL,
        type TEXT NOT NULL,
        config TEXT NOT NULL,
        payload TEXT NOT NULL,
        status TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        next_attempt_at BIGINT NOT NULL,
        last_error TEXT,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        claimed_by TEXT,
        lease_until BIGINT
      );
      CREATE UNIQUE INDEX action_outbox_key ON action_outbox(idempotency_key);
      CREATE INDEX action_outbox_due ON action_outbox(next_attempt_at, id) WHERE status = 'pending';
      CREATE INDEX action_outbox_claims ON action_outbox(claimed_by) WHERE status = 'delivering';
      CREATE INDEX action_outbox_dead ON action_outbox(rule_domain, id) WHERE status = 'dead';
    `,
  },
];
