import type { Db } from "../store/index.js";
import { parseKey, type FileLocation } from "./keys.js";
import { listingKeyRange } from "./listing.js";
import type { FileMetadataStore, FileVersion, ListQuery, NewFileVersion } from "./store.js";

interface VersionRow {
  seq: number;
  key: string;
  version_id: string;
  size: number;
  md5: string;
  content_type: string | null;
  content_encoding: string | null;
  content_disposition: string | null;
  last_modified: number;
}

const COLUMNS =
  "v.seq, v.key, v.version_id, v.size, v.md5, v.content_type, v.content_encoding, v.content_disposition, v.last_modified";

/** The metadata of file versions in the process's SQLite database (`filesMigrations`). */
export class SqliteFileMetadataStore implements FileMetadataStore {
  constructor(private readonly db: Db) {}

  async addVersion(key: string, location: FileLocation, v: NewFileVersion): Promise<FileVersion> {
    const row = this.db.transaction(() => {
      const { lastInsertRowid } = this.db
        .prepare(
          `INSERT INTO file_versions (key, version_id, size, md5, content_type, content_encoding, content_disposition, last_modified)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
        )
        .run(key, v.versionId, v.size, v.md5, v.contentType, v.contentEncoding, v.contentDisposition, v.lastModified);
      this.db
        .prepare(
          `INSERT INTO file_objects (key, folder, owner, name, seq) VALUES (?, ?, ?, ?, ?)
           ON CONFLICT (key) DO UPDATE SET seq = excluded.seq`,
        )
        .run(key, location.folder, location.owner, location.name, lastInsertRowid);
      return this.db
        .prepare<[number | bigint], VersionRow>(`SELECT ${COLUMNS} FROM file_versions v WHERE seq = ?`)
        .get(lastInsertRowid)!;
    })();
    return toVersion(row);
  }

  async newest(key: string): Promise<FileVersion | undefined> {
    const row = this.db
      .prepare<[string], VersionRow>(
        `SELECT ${COLUMNS} FROM file_objects o JOIN file_versions v ON v.seq = o.seq WHERE o.key = ?`,
      )
      .get(key);
    return row && toVersion(row);
  }

  async list(query: ListQuery): Promise<FileVersion[]> {
    if (query.folders.length === 0) return [];
    const params: Record<string, string | number> = {
      after: query.after ?? "",
      limit: query.limit,
      namePrefix: query.namePrefix,
    };
    const scopes = query.folders.map((f, i) => {
      params[`f${i}`] = f.folder;
      if (f.owners === "*") return `(o.folder = @f${i})`;
      params[`o${i}`] = JSON.stringify(f.owners);
      return `(o.folder = @f${i} AND o.owner IN (SELECT value FROM json_each(@o${i})))`;
    });
    // One folder of one owner: a key range, so the primary key index does the work.
    let range = "";
    const keys = listingKeyRange(query);
    if (keys) {
      params.lo = keys.lo;
      params.hi = keys.hi;
      range = "AND o.key >= @lo AND o.key < @hi";
    }
    const rows = this.db
      .prepare<[Record<string, string | number>], VersionRow>(
        `SELECT ${COLUMNS} FROM file_objects o JOIN file_versions v ON v.seq = o.seq
         WHERE o.key > @after ${range}
           AND substr(o.name, 1, length(@namePrefix)) = @namePrefix
           AND (${scopes.join(" OR ")})
         ORDER BY o.key LIMIT @limit`,
      )
      .all(params);
    return rows.map(toVersion);
  }

  async versions(key: string): Promise<FileVersion[]> {
    return this.db
      .prepare<[string], VersionRow>(`SELECT ${COLUMNS} FROM file_versions v WHERE key = ? ORDER BY seq DESC`)
      .all(key)
      .map(toVersion);
  }

  async removeVersions(key: string, allVersions: boolean): Promise<string[]> {
    return this.db.transaction(() => {
      const all = this.db
        .prepare<[string], { seq: number; version_id: string }>(
          "SELECT seq, version_id FROM file_versions WHERE key = ? ORDER BY seq DESC",
        )
        .all(key);
      if (all.length === 0) return [];
      const gone = allVersions ? all : all.slice(0, 1);
      const next = allVersions ? undefined : all[1];
      if (next) this.db.prepare("UPDATE file_objects SET seq = ? WHERE key = ?").run(next.seq, key);
      else this.db.prepare("DELETE FROM file_objects WHERE key = ?").run(key);
      const del = this.db.prepare("DELETE FROM file_versions WHERE seq = ?");
      for (const v of gone) del.run(v.seq);
      return gone.map((v) => v.version_id);
    })();
  }

  async versionIds(): Promise<Set<string>> {
    return new Set(
      this.db
        .prepare<[], { version_id: string }>("SELECT version_id FROM file_versions")
        .all()
        .map((r) => r.version_id),
    );
  }
}

function toVersion(row: VersionRow): FileVersion {
  const location = parseKey(row.key)!;
  return {
    ...location,
    key: row.key,
    versionId: row.version_id,
    size: row.size,
    md5: row.md5,
    contentType: row.content_type,
    contentEncoding: row.content_encoding,
    contentDisposition: row.content_disposition,
    lastModified: row.last_modified,
  };
}
