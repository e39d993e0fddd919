import type { Migration } from "../store/index.js";

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
];
