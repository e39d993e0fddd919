import type { Migration, PgMigration } from "../store/index.js";

export const eventsMigrations: Migration[] = [
  {
    id: "events-001-store",
    up: `
      CREATE TABLE events (
        id INTEGER PRIMARY KEY,
        -- The outbox delivery that made the event: a redelivery stores it once.
        idempotency_key TEXT NOT NULL UNIQUE,
        rule_id TEXT NOT NULL,
        category TEXT,
        thing_name TEXT NOT NULL,
        thing_type TEXT NOT NULL,
        domain TEXT NOT NULL,
        classification TEXT NOT NULL,
        message TEXT NOT NULL,
        acknowledgment_required INTEGER NOT NULL,
        acknowledged_at INTEGER,
        acknowledged_by TEXT,
        ts INTEGER NOT NULL
      );
      CREATE INDEX events_domain_ts ON events(domain, ts);
      CREATE INDEX events_thing_ts ON events(thing_name, ts);
    `,
  },
  {
    // Retention (DMS_EVENT_RETENTION) deletes the oldest events first.
    id: "events-002-ts",
    up: "CREATE INDEX events_ts ON events(ts);",
  },
];

/** The same table for `PgEventStore`: times are TIMESTAMPTZ, read back as the ISO 8601 times SQLite's epoch ms give. */
export const eventsPgMigrations: PgMigration[] = [
  {
    id: "events-001-store",
    up: `
      CREATE TABLE events (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        -- The outbox delivery that made the event: a redelivery stores it once.
        idempotency_key TEXT NOT NULL UNIQUE,
        rule_id TEXT NOT NULL,
        category TEXT,
        thing_name TEXT NOT NULL,
        thing_type TEXT NOT NULL,
        domain TEXT NOT NULL,
        classification TEXT NOT NULL,
        message TEXT NOT NULL,
        acknowledgment_required BOOLEAN NOT NULL,
        acknowledged_at TIMESTAMPTZ,
        acknowledged_by TEXT,
        ts TIMESTAMPTZ NOT NULL
      );
      CREATE INDEX events_domain_ts ON events(domain, ts);
      CREATE INDEX events_thing_ts ON events(thing_name, ts);
      -- Retention (DMS_EVENT_RETENTION) deletes the oldest events first.
      CREATE INDEX events_ts ON events(ts);
    `,
  },
];
