import type { Migration, PgMigration } from "../store/index.js";

export const rulesMigrations: Migration[] = [
  {
    id: "rules-001-store",
    up: `
      CREATE TABLE rules (
        id TEXT PRIMARY KEY,
        -- A domain that still holds rules cannot be deleted.
        domain TEXT NOT NULL REFERENCES domains(id),
        thing_type TEXT NOT NULL,
        enabled INTEGER NOT NULL,
        doc TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE INDEX rules_thing_type ON rules(thing_type);
      CREATE INDEX rules_domain ON rules(domain);
      -- One row: the last number handed out for generated rule ids.
      CREATE TABLE rule_id_sequence (one INTEGER PRIMARY KEY CHECK (one = 1), value INTEGER NOT NULL);
      INSERT INTO rule_id_sequence (one, value) VALUES (1, 0);
    `,
  },
];

/** The same tables for `PgRuleStore`. */
export const rulesPgMigrations: PgMigration[] = [
  {
    id: "rules-001-store",
    // `doc` is `json`, not `jsonb`: json keeps the document's text, so a rule reads back with its
    // keys in the order they were written, as from SQLite. No foreign key to the domains yet: the
    // identity store's PostgreSQL tables come with the cluster, and add it then.
    up: `
      CREATE TABLE rules (
        id TEXT PRIMARY KEY,
        domain TEXT NOT NULL,
        thing_type TEXT NOT NULL,
        enabled BOOLEAN NOT NULL,
        doc JSON NOT NULL,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
      );
      CREATE INDEX rules_thing_type ON rules(thing_type);
      CREATE INDEX rules_domain ON rules(domain);
      CREATE SEQUENCE rule_id_sequence;
    `,
  },
];
