import { pgTransaction, type PgPool } from "../store/index.js";
import { parseKey, type FileLocation } from "./keys.js";
import { listingKeyRange } from "./listing.js";
import type { FileMetadataStore, FileVersion, ListQuery, NewFileVersion } from "./store.js";

interface PgVersionRow {
  key: string;
  version_id: string;
  size: string;
  md5: string;
  content_type: string | null;
  content_encoding: string | null;
  content_disposition: string | null;
  last_modified: Date;
}

const COLUMNS =
  "v.key, v.version_id, v.size, v.md5, v.content_type, v.content_encoding, v.content_disposition, v.last_modified";

/** The metadata of file versions in PostgreSQL (`filesPgMigrations`), for processes of a cluster sharing one database. */
export class PgFileMetadataStore implements FileMetadataStore {
  constructor(private readonly pool: PgPool) {}

  async addVersion(key: string, location: FileLocation, v: NewFileVersion): Promise<FileVersion> {
    // One statement. Two versions of a key added at once: the object keeps the higher seq, the newer.
    const { rows } = await this.pool.query<PgVersionRow>(
      `WITH v AS (
         INSERT INTO file_versions (key, version_id, size, md5, content_type, content_encoding, content_disposition, last_modified)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING *
       ), o AS (
         INSERT INTO file_objects (key, folder, owner, name, seq) SELECT key, $9, $10, $11, seq FROM v
         ON CONFLICT (key) DO UPDATE SET seq = greatest(file_objects.seq, excluded.seq)
       )
       SELECT ${COLUMNS} FROM v`,
      [
        key,
        v.versionId,
        v.size,
        v.md5,
        v.contentType,
        v.contentEncoding,
        v.contentDisposition,
        new Date(v.lastModified),
        location.folder,
        location.owner,
        location.name,
      ],
    );
    return toVersion(rows[0]!);
  }

  async newest(key: string): Promise<FileVersion | undefined> {
    const { rows } = await this.pool.query<PgVersionRow>(
      `SELECT ${COLUMNS} FROM file_objects o JOIN file_versions v ON v.seq = o.seq WHERE o.key = $1`,
      [key],
    );
    return rows[0] && toVersion(rows[0]);
  }

  async list(query: ListQuery): Promise<FileVersion[]> {
    if (query.folders.length === 0) return [];
    const args: unknown[] = [query.after ?? "", query.namePrefix, query.limit];
    const param = (value: unknown): string => `$${args.push(value)}`;
    const scopes = query.folders.map((f) =>
      f.owners === "*"
        ? `(o.folder = ${param(f.folder)})`
        : `(o.folder = ${param(f.folder)} AND o.owner = ANY(${param(f.owners)}::text[]))`,
    );
    // One folder of one owner: a key range, so the primary key index does the work.
    const keys = listingKeyRange(query);
    const range = keys ? `AND o.key >= ${param(keys.lo)} AND o.key < ${param(keys.hi)}` : "";
    // Keys are COLLATE "C" (byte order), as SQLite compares and sorts them.
    const { rows } = await this.pool.query<PgVersionRow>(
      `SELECT ${COLUMNS} FROM file_objects o JOIN file_versions v ON v.seq = o.seq
       WHERE o.key > $1 ${range} AND starts_with(o.name, $2) AND (${scopes.join(" OR ")})
       ORDER BY o.key LIMIT $3`,
      args,
    );
    return rows.map(toVersion);
  }

  async versions(key: string): Promise<FileVersion[]> {
    const { rows } = await this.pool.query<PgVersionRow>(
      `SELECT ${COLUMNS} FROM file_versions v WHERE key = $1 ORDER BY seq DESC`,
      [key],
    );
    return rows.map(toVersion);
  }

  async removeVersions(key: string, allVersions: boolean): Promise<string[]> {
    return pgTransaction(this.pool, async (tx) => {
      // The object's row lock orders this after (or before) an add or removal of the same key.
      const object = await tx.query("SELECT seq FROM file_objects WHERE key = $1 FOR UPDATE", [key]);
      if (object.rowCount === 0) return [];
      const { rows: all } = await tx.query<{ seq: string; version_id: string }>(
        "SELECT seq, version_id FROM file_versions WHERE key = $1 ORDER BY seq DESC",
        [key],
      );
      const gone = allVersions ? all : all.slice(0, 1);
      const next = allVersions ? undefined : all[1];
      if (next) await tx.query("UPDATE file_objects SET seq = $1 WHERE key = $2", [next.seq, key]);
      else await tx.query("DELETE FROM file_objects WHERE key = $1", [key]);
      await tx.query("DELETE FROM file_versions WHERE seq = ANY($1::bigint[])", [gone.map((v) => v.seq)]);
      return gone.map((v) => v.version_id);
    });
  }

  async versionIds(): Promise<Set<string>> {
    const { rows } = await this.pool.query<{ version_id: string }>("SELECT version_id FROM file_versions");
    return new Set(rows.map((r) => r.version_id));
  }
}

function toVersion(row: PgVersionRow): FileVersion {
  return {
    ...parseKey(row.key)!,
    key: row.key,
    versionId: row.version_id,
    size: Number(row.size),
    md5: row.md5,
    contentType: row.content_type,
    contentEncoding: row.content_encoding,
    contentDisposition: row.content_disposition,
    lastModified: row.last_modified.getTime(),
  };
}
