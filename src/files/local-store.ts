import { createHash, randomBytes } from "node:crypto";
import { createWriteStream, mkdirSync, readdirSync, rmSync } from "node:fs";
import { open, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { Transform, type Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { Db } from "../store/index.js";
import { parseKey } from "./keys.js";
import {
  PutError,
  type ByteRange,
  type FileStore,
  type FileVersion,
  type ListQuery,
  type PutOptions,
} from "./store.js";

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
// The highest code point: every key with the prefix sorts below prefix + this in SQLite's byte order.
const TOP = "\u{10FFFF}";
const CHUNK = 1024 * 1024;

export interface LocalFileStoreOptions {
  db: Db;
  /** Directory for the objects (`objects/`) and in-flight uploads (`tmp/`). */
  dir: string;
  clock?: () => number;
}

/**
 * Objects on local disk, metadata in SQLite. Each version is its own file
 * named by its version id (never by the key, so no name can reach outside the
 * store). A write goes to `tmp/`, is renamed into `objects/` when complete and
 * checked, and only then becomes visible through a metadata row: a crash at
 * any point leaves no half file visible, at worst an orphan that the next
 * start sweeps away.
 */
export class LocalFileStore implements FileStore {
  private readonly db: Db;
  private readonly objects: string;
  private readonly tmp: string;
  private readonly clock: () => number;

  constructor(options: LocalFileStoreOptions) {
    this.db = options.db;
    this.clock = options.clock ?? Date.now;
    this.objects = join(options.dir, "objects");
    this.tmp = join(options.dir, "tmp");
    mkdirSync(this.objects, { recursive: true });
    rmSync(this.tmp, { recursive: true, force: true });
    mkdirSync(this.tmp, { recursive: true });
    this.sweepOrphans();
  }

  async put(key: string, body: Readable, options: PutOptions = {}): Promise<FileVersion> {
    const location = parseKey(key);
    if (!location) throw new Error(`not a file key: ${key}`);
    const versionId = randomBytes(16).toString("hex");
    const tmpFile = join(this.tmp, versionId);
    try {
      const { size, md5 } = await writeCounted(body, tmpFile, options.maxBytes ?? Number.MAX_SAFE_INTEGER);
      if (options.contentMD5 !== undefined && Buffer.from(md5, "hex").toString("base64") !== options.contentMD5) {
        throw new PutError("BAD_DIGEST", "The Content-MD5 you specified did not match what was received");
      }
      const blob = this.blobPath(versionId);
      mkdirSync(join(blob, ".."), { recursive: true });
      await rename(tmpFile, blob);
      const lastModified = this.clock();
      const row = this.db.transaction(() => {
        const { lastInsertRowid } = this.db
          .prepare(
            `INSERT INTO file_versions (key, version_id, size, md5, content_type, content_encoding, content_disposition, last_modified)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
          )
          .run(
            key,
            versionId,
            size,
            md5,
            options.contentType ?? null,
            options.contentEncoding ?? null,
            options.contentDisposition ?? null,
            lastModified,
          );
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
    } finally {
      await rm(tmpFile, { force: true });
    }
  }

  async head(key: string): Promise<FileVersion | undefined> {
    const row = this.db
      .prepare<[string], VersionRow>(
        `SELECT ${COLUMNS} FROM file_objects o JOIN file_versions v ON v.seq = o.seq WHERE o.key = ?`,
      )
      .get(key);
    return row && toVersion(row);
  }

  async read(key: string, range?: ByteRange): Promise<{ version: FileVersion; stream: Readable } | undefined> {
    // A removal between the lookup and the open is retried once against the then newest version.
    for (let attempt = 0; attempt < 2; attempt++) {
      const version = await this.head(key);
      if (!version) return undefined;
      try {
        const handle = await open(this.blobPath(version.versionId), "r");
        // 1 MiB reads: a sixteenth of the chunks (and promise hops in the HTTP layer) of the 64 KiB default.
        const stream = handle.createReadStream({
          highWaterMark: CHUNK,
          ...(range && { start: range.start, end: range.end }),
        });
        return { version, stream };
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
      }
    }
    return undefined;
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
    const only = query.folders.length === 1 ? query.folders[0]! : undefined;
    if (
      only &&
      (only.folder === "public" || only.folder === "root" || (only.owners !== "*" && only.owners.length === 1))
    ) {
      const owner = only.owners === "*" ? "" : only.owners[0]!;
      const prefix =
        (only.folder === "public" || only.folder === "root" ? `${only.folder}/` : `${only.folder}/${owner}/`) +
        query.namePrefix;
      params.lo = prefix;
      params.hi = prefix + TOP;
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

  async remove(key: string, allVersions: boolean): Promise<number> {
    const removed = this.db.transaction(() => {
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
    // Blobs go after the commit: a crash in between leaves orphans, never a row without its bytes.
    await Promise.all(removed.map((id) => rm(this.blobPath(id), { force: true })));
    return removed.length;
  }

  private blobPath(versionId: string): string {
    return join(this.objects, versionId.slice(0, 2), versionId);
  }

  /** Blobs without a metadata row are left by a crash between rename and commit (or commit and unlink). */
  private sweepOrphans(): void {
    const known = new Set(
      this.db
        .prepare<[], { version_id: string }>("SELECT version_id FROM file_versions")
        .all()
        .map((r) => r.version_id),
    );
    for (const shard of readdirSync(this.objects)) {
      for (const id of readdirSync(join(this.objects, shard))) {
        if (!known.has(id)) rmSync(join(this.objects, shard, id), { force: true });
      }
    }
  }
}

/** Streams `body` into `file` while counting and hashing, in one pass. */
async function writeCounted(body: Readable, file: string, maxBytes: number): Promise<{ size: number; md5: string }> {
  const hash = createHash("md5");
  let size = 0;
  const meter = new Transform({
    highWaterMark: CHUNK,
    transform(chunk: Buffer, _encoding, callback) {
      size += chunk.length;
      if (size > maxBytes) return callback(new PutError("TOO_LARGE", `The body is over ${maxBytes} bytes`));
      hash.update(chunk);
      callback(null, chunk);
    },
  });
  await pipeline(body, meter, createWriteStream(file, { flags: "wx", highWaterMark: CHUNK }));
  return { size, md5: hash.digest("hex") };
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
