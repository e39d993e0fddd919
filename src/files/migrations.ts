import type { Migration, PgMigration } from "../store/index.js";

export const filesMigrations: readonly Migration[] = [
  {
    id: "files-001-versions",
    up: `
      -- Every stored version; seq orders them (newest = highest).
      CREATE TABLE file_versions (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        key TEXT NOT NULL,
        version_id TEXT NOT NULL UNIQUE,
        size INTEGER NOT NULL,
        md5 TEXT NOT NULL,
        content_type TEXT,
        content_encoding TEXT,
        content_disposition TEXT,
        last_modified INTEGER NOT NULL
      );
      CREATE INDEX file_versions_key ON file_versions (key, seq);
      -- One row per visible file, pointing at its newest version: listings read only this.
      CREATE TABLE file_objects (
        key TEXT PRIMARY KEY,
        folder TEXT NOT NULL,
        owner TEXT NOT NULL,
        name TEXT NOT NULL,
        seq INTEGER NOT NULL REFERENCES file_versions (seq)
      );
      CREATE INDEX file_objects_owner ON file_objects (folder, owner, key);
    `,
  },
];

/**
 * The same tables for `PgFileMetadataStore`. Keys and names are COLLATE "C": listings compare and
 * sort them in byte order, as SQLite does, whatever the database's locale.
 */
export const filesPgMigrations: readonly PgMigration[] = [
  {
    id: "files-001-versions",
    up: `
      -- Every stored version; seq orders them (newest = highest).
      CREATE TABLE file_versions (
        seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        key TEXT COLLATE "C" NOT NULL,
        version_id TEXT NOT NULL UNIQUE,
        size BIGINT NOT NULL,
        md5 TEXT NOT NULL,
        content_type TEXT,
        content_encoding TEXT,
        content_disposition TEXT,
        last_modified TIMESTAMPTZ NOT NULL
      );
      CREATE INDEX file_versions_key ON file_versions (key, seq);
      -- One row per visible file, pointing at its newest version: listings read only this.
      CREATE TABLE file_objects (
        key TEXT COLLATE "C" PRIMARY KEY,
        folder TEXT NOT NULL,
        owner TEXT NOT NULL,
        name TEXT COLLATE "C" NOT NULL,
        seq BIGINT NOT NULL REFERENCES file_versions (seq)
      );
      CREATE INDEX file_objects_owner ON file_objects (folder, owner, key);
    `,
  },
  {
    id: "files-002-chunks",
    up: `
      -- File contents for PgFileStore, in chunks so that no file is held in memory whole.
      -- A version's chunks are written before its metadata row: chunks without one are an upload
      -- in flight or one that died, swept once older than an upload can take.
      CREATE TABLE file_chunks (
        version_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        data BYTEA NOT NULL,
        written_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        PRIMARY KEY (version_id, seq)
      );
      -- Chunks are read and written whole: no TOAST compression of bytes that are mostly compressed already.
      ALTER TABLE file_chunks ALTER COLUMN data SET STORAGE EXTERNAL;
    `,
  },
];
