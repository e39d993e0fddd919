import type { Migration, PgMigration } from "../store/index.js";

export const authMigrations: Migration[] = [
  {
    id: "auth-001-identity",
    up: `
      CREATE TABLE domains (
        id TEXT PRIMARY KEY,
        parent TEXT REFERENCES domains(id),
        label TEXT NOT NULL,
        path TEXT NOT NULL UNIQUE,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE INDEX domains_parent ON domains(parent);
      CREATE TABLE users (
        user_name TEXT PRIMARY KEY,
        password_hash TEXT NOT NULL,
        role TEXT NOT NULL CHECK (role IN ('Read', 'ReadWrite')),
        home_domain TEXT NOT NULL REFERENCES domains(id),
        email TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE TABLE user_privileges (
        user_name TEXT NOT NULL REFERENCES users(user_name) ON DELETE CASCADE,
        domain TEXT NOT NULL REFERENCES domains(id) ON DELETE CASCADE,
        privilege TEXT NOT NULL,
        PRIMARY KEY (user_name, domain, privilege)
      );
      CREATE TABLE api_keys (
        id TEXT PRIMARY KEY,
        key_hash TEXT NOT NULL UNIQUE,
        label TEXT NOT NULL DEFAULT '',
        created_at TEXT NOT NULL
      );
    `,
  },
  {
    id: "auth-002-refresh-tokens",
    up: `
      CREATE TABLE refresh_tokens (
        jti TEXT PRIMARY KEY,
        family TEXT NOT NULL,
        user_name TEXT NOT NULL,
        expires_at INTEGER NOT NULL,
        used_at INTEGER,
        revoked_at INTEGER
      );
      CREATE INDEX refresh_tokens_family ON refresh_tokens(family);
      CREATE INDEX refresh_tokens_expires ON refresh_tokens(expires_at);
    `,
  },
  {
    // The one key that GET /metadata/manifest hands out without credentials (the MIC clients'
    // ApiKey). It is public by purpose, so it is kept in clear beside its hash; other keys are not.
    id: "auth-003-public-api-key",
    up: `ALTER TABLE api_keys ADD COLUMN public_key TEXT`,
  },
];

/**
 * The same tables on PostgreSQL, the root domain written with them; refresh token times are epoch
 * milliseconds, as the callers' clocks give them.
 */
export const identityPgMigrations: PgMigration[] = [
  {
    id: "identity-001",
    up: `
      CREATE TABLE domains (
        id TEXT PRIMARY KEY,
        parent TEXT REFERENCES domains(id),
        label TEXT NOT NULL,
        path TEXT NOT NULL UNIQUE,
        created_at TIMESTAMPTZ NOT NULL,
        updated_at TIMESTAMPTZ NOT NULL
      );
      CREATE INDEX domains_parent ON domains(parent);
      CREATE TABLE users (
        user_name TEXT PRIMARY KEY,
        password_hash TEXT NOT NULL,
        role TEXT NOT NULL CHECK (role IN ('Read', 'ReadWrite')),
        home_domain TEXT NOT NULL REFERENCES domains(id),
        email TEXT,
        created_at TIMESTAMPTZ NOT NULL,
        updated_at TIMESTAMPTZ NOT NULL
      );
      CREATE TABLE user_privileges (
        user_name TEXT NOT NULL REFERENCES users(user_name) ON DELETE CASCADE,
        domain TEXT NOT NULL REFERENCES domains(id) ON DELETE CASCADE,
        privilege TEXT NOT NULL,
        PRIMARY KEY (user_name, domain, privilege)
      );
      CREATE TABLE api_keys (
        id TEXT PRIMARY KEY,
        key_hash TEXT NOT NULL UNIQUE,
        label TEXT NOT NULL DEFAULT '',
        created_at TIMESTAMPTZ NOT NULL,
        public_key TEXT
      );
      CREATE TABLE refresh_tokens (
        jti TEXT PRIMARY KEY,
        family TEXT NOT NULL,
        user_name TEXT NOT NULL,
        expires_at BIGINT NOT NULL,
        used_at BIGINT,
        revoked_at BIGINT
      );
      CREATE INDEX refresh_tokens_family ON refresh_tokens(family);
      CREATE INDEX refresh_tokens_expires ON refresh_tokens(expires_at);
      INSERT INTO domains (id, parent, label, path, created_at, updated_at) VALUES ('root', NULL, 'root', 'root', now(), now());
    `,
  },
];
