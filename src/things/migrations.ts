import type { Migration, PgMigration } from "../store/index.js";

export const thingsMigrations: Migration[] = [
  {
    id: "things-001-registry",
    up: `
      CREATE TABLE thing_types (
        id TEXT PRIMARY KEY,
        label TEXT NOT NULL,
        domain TEXT NOT NULL REFERENCES domains(id),
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE TABLE thing_type_resources (
        thing_type TEXT NOT NULL REFERENCES thing_types(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        data_type TEXT NOT NULL,
        resource_type TEXT NOT NULL,
        PRIMARY KEY (thing_type, name)
      );
      CREATE TABLE things (
        thing_name TEXT PRIMARY KEY,
        thing_type TEXT NOT NULL REFERENCES thing_types(id),
        domain TEXT NOT NULL REFERENCES domains(id),
        serial TEXT UNIQUE,
        secret_hash TEXT,
        label TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE INDEX things_type ON things(thing_type);
      CREATE INDEX things_domain ON things(domain);
      CREATE TABLE thing_groups (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        domain TEXT NOT NULL REFERENCES domains(id),
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE TABLE thing_group_members (
        group_id TEXT NOT NULL REFERENCES thing_groups(id) ON DELETE CASCADE,
        thing_name TEXT NOT NULL REFERENCES things(thing_name) ON DELETE CASCADE,
        added_at TEXT NOT NULL,
        PRIMARY KEY (group_id, thing_name)
      );
      CREATE INDEX thing_group_members_thing ON thing_group_members(thing_name);
    `,
  },
  {
    // What the provisioning file last applied to each thing (a keyed digest of its entry), so that an
    // unchanged entry is skipped at the next start without hashing its secret again.
    id: "things-002-provisions",
    up: `
      CREATE TABLE thing_provisions (
        thing_name TEXT PRIMARY KEY REFERENCES things(thing_name) ON DELETE CASCADE,
        digest TEXT NOT NULL
      );
    `,
  },
];

/**
 * The same tables for `PgThingStore`. No foreign key to the domains: the identity store's
 * PostgreSQL tables are a seam of their own, and the registry checks domains before it writes.
 */
export const thingsPgMigrations: PgMigration[] = [
  {
    id: "things-001-registry",
    up: `
      CREATE TABLE thing_types (
        id TEXT PRIMARY KEY,
        label TEXT NOT NULL,
        domain TEXT NOT NULL,
        created_at TIMESTAMPTZ NOT NULL,
        updated_at TIMESTAMPTZ NOT NULL
      );
      CREATE TABLE thing_type_resources (
        thing_type TEXT NOT NULL REFERENCES thing_types(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        data_type TEXT NOT NULL,
        resource_type TEXT NOT NULL,
        PRIMARY KEY (thing_type, name)
      );
      CREATE TABLE things (
        thing_name TEXT PRIMARY KEY,
        thing_type TEXT NOT NULL REFERENCES thing_types(id),
        domain TEXT NOT NULL,
        serial TEXT UNIQUE,
        secret_hash TEXT,
        label TEXT,
        created_at TIMESTAMPTZ NOT NULL,
        updated_at TIMESTAMPTZ NOT NULL
      );
      CREATE INDEX things_type ON things(thing_type);
      CREATE INDEX things_domain ON things(domain);
      CREATE TABLE thing_groups (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        domain TEXT NOT NULL,
        created_at TIMESTAMPTZ NOT NULL,
        updated_at TIMESTAMPTZ NOT NULL
      );
      CREATE TABLE thing_group_members (
        group_id TEXT NOT NULL REFERENCES thing_groups(id) ON DELETE CASCADE,
        thing_name TEXT NOT NULL REFERENCES things(thing_name) ON DELETE CASCADE,
        added_at TIMESTAMPTZ NOT NULL,
        PRIMARY KEY (group_id, thing_name)
      );
      CREATE INDEX thing_group_members_thing ON thing_group_members(thing_name);
      CREATE TABLE thing_provisions (
        thing_name TEXT PRIMARY KEY REFERENCES things(thing_name) ON DELETE CASCADE,
        digest TEXT NOT NULL
      );
    `,
  },
];
