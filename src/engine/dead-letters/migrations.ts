import type { Migration, PgMigration } from "../../store/index.js";

export const deadLetterMigrations: Migration[] = [
  {
    id: "engine-002-dead-letters",
    up: `
      CREATE TABLE engine_dead_letters (
        id INTEGER PRIMARY KEY,
        source TEXT NOT NULL,
        partition INTEGER,
        "offset" TEXT,
        thing_name TEXT,
        domain TEXT,
        reason TEXT NOT NULL,
        message TEXT NOT NULL,
        payload TEXT,
        created_at INTEGER NOT NULL
      );
      CREATE INDEX engine_dead_letters_created ON engine_dead_letters(created_at);
    `,
  },
];

/** The same table for `PgDeadLetterStore`; `created_at` is TIMESTAMPTZ, read back as SQLite's epoch ms. */
export const deadLetterPgMigrations: PgMigration[] = [
  {
    id: "engine-002-dead-letters",
    up: `
      CREATE TABLE engine_dead_letters (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        source TEXT NOT NULL,
        partition INTEGER,
        "offset" TEXT,
        thing_name TEXT,
        domain TEXT,
        reason TEXT NOT NULL,
        message TEXT NOT NULL,
        payload TEXT,
        created_at TIMESTAMPTZ NOT NULL
      );
      CREATE INDEX engine_dead_letters_created ON engine_dead_letters(created_at);
    `,
  },
];
