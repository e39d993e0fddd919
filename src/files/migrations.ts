import type { Migration } from "../store/index.js";

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
