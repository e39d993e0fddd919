import type { Migration } from "../store/index.js";

export const searchMigrations: readonly Migration[] = [
  {
    id: "search-001-entries",
    up: `
      -- The searchable entries; derived data, rebuilt from domains and thing types at start.
      CREATE TABLE search_entries (
        rowid INTEGER PRIMARY KEY,
        search_type TEXT NOT NULL,          -- 'domain' | 'resource'
        id TEXT NOT NULL,                   -- domain id, or '<thingTypeId>/<resource>'
        label TEXT NOT NULL,
        domain TEXT NOT NULL,               -- the domain itself, or the thing type's domain
        parent TEXT,
        path TEXT,
        data_type TEXT,
        resource_type TEXT,
        thing_type TEXT,
        UNIQUE (search_type, id)
      );
      CREATE INDEX search_entries_type ON search_entries (thing_type);
      -- Words of label and id; prefix indexes make 'La*' a range lookup instead of a scan.
      CREATE VIRTUAL TABLE search_words USING fts5 (
        label, ident,
        content = 'search_entries', content_rowid = 'rowid',
        tokenize = 'unicode61 remove_diacritics 2',
        prefix = '1 2 3'
      );
      CREATE TRIGGER search_entries_ai AFTER INSERT ON search_entries BEGIN
        INSERT INTO search_words (rowid, label, ident) VALUES (new.rowid, new.label, new.id);
      END;
      CREATE TRIGGER search_entries_ad AFTER DELETE ON search_entries BEGIN
        INSERT INTO search_words (search_words, rowid, label, ident) VALUES ('delete', old.rowid, old.label, old.id);
      END;
      CREATE TRIGGER search_entries_au AFTER UPDATE ON search_entries BEGIN
        INSERT INTO search_words (search_words, rowid, label, ident) VALUES ('delete', old.rowid, old.label, old.id);
        INSERT INTO search_words (rowid, label, ident) VALUES (new.rowid, new.label, new.id);
      END;
    `,
  },
];
