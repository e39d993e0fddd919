import { createHash, randomBytes } from "node:crypto";
import { Readable, Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { PgPool } from "../store/index.js";
import { parseKey } from "./keys.js";
import {
  PutError,
  type ByteRange,
  type FileMetadataStore,
  type FileStore,
  type FileVersion,
  type ListQuery,
  type PutOptions,
} from "./store.js";

/** Bytes per stored chunk: a write holds one chunk in memory, a read one or two. */
export const FILE_CHUNK_BYTES = 1024 * 1024;
/** Chunks of no recorded version older than this are a dead upload's, swept. */
const ABANDONED_AFTER = "1 hour";

export interface PgFileStoreOptions {
  pool: PgPool;
  /** Where the versions are recorded (the same database's `PgFileMetadataStore` in a cluster). */
  metadata: FileMetadataStore;
  clock?: () => number;
}

/**
 * File contents in PostgreSQL, so that every node of a cluster serves every file: each version's
 * bytes are rows of 1 MiB chunks, streamed in and out. A version becomes visible only when its
 * metadata is recorded after the last chunk, so a reader never meets half a file; an upload that
 * dies leaves chunks that the next start sweeps.
 */
export class PgFileStore implements FileStore {
  private readonly pool: PgPool;
  private readonly metadata: FileMetadataStore;
  private readonly clock: () => number;

  constructor(options: PgFileStoreOptions) {
    this.pool = options.pool;
    this.metadata = options.metadata;
    this.clock = options.clock ?? Date.now;
    // A failed sweep leaves the chunks for the next start; it never fails this one.
    this.sweepAbandoned().catch(() => undefined);
  }

  /** Deletes the chunks of uploads that died (no version recorded, older than any live upload). */
  async sweepAbandoned(): Promise<number> {
    const known = await this.metadata.versionIds();
    const { rows } = await this.pool.query<{ version_id: string }>(
      `SELECT DISTINCT version_id FROM file_chunks WHERE written_at < now() - interval '${ABANDONED_AFTER}'`,
    );
    const orphans = rows.map((r) => r.version_id).filter((id) => !known.has(id));
    if (orphans.length > 0) await this.pool.query("DELETE FROM file_chunks WHERE version_id = ANY($1)", [orphans]);
    return orphans.length;
  }

  async put(key: string, body: Readable, options: PutOptions = {}): Promise<FileVersion> {
    const location = parseKey(key);
    if (!location) throw new Error(`not a file key: ${key}`);
    const versionId = randomBytes(16).toString("hex");
    const maxBytes = options.maxBytes ?? Number.MAX_SAFE_INTEGER;
    const hash = createHash("md5");
    let size = 0;
    let seq = 0;
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    const insert = (data: Buffer): Promise<unknown> =>
      this.pool.query("INSERT INTO file_chunks (version_id, seq, data) VALUES ($1, $2, $3)", [versionId, seq++, data]);
    /** Writes every whole chunk held (reads find byte n in chunk n / FILE_CHUNK_BYTES), and the rest at the end. */
    const flush = async (final: boolean): Promise<void> => {
      if (pendingBytes === 0 || (!final && pendingBytes < FILE_CHUNK_BYTES)) return;
      let held = Buffer.concat(pending, pendingBytes);
      while (held.length >= FILE_CHUNK_BYTES) {
        await insert(held.subarray(0, FILE_CHUNK_BYTES));
        held = held.subarray(FILE_CHUNK_BYTES);
      }
      if (final && held.length > 0) {
        await insert(held);
        held = Buffer.alloc(0);
      }
      pending = held.length > 0 ? [held] : [];
      pendingBytes = held.length;
    };
    const sink = new Writable({
      highWaterMark: FILE_CHUNK_BYTES,
      write: (chunk: Buffer, _encoding, callback) => {
        size += chunk.length;
        if (size > maxBytes) return callback(new PutError("TOO_LARGE", `The body is over ${maxBytes} bytes`));
        hash.update(chunk);
        pending.push(chunk);
        pendingBytes += chunk.length;
        flush(false).then(() => callback(), callback);
      },
      final: (callback) => {
        flush(true).then(() => callback(), callback);
      },
    });
    try {
      await pipeline(body, sink);
      const md5 = hash.digest("hex");
      if (options.contentMD5 !== undefined && Buffer.from(md5, "hex").toString("base64") !== options.contentMD5) {
        throw new PutError("BAD_DIGEST", "The Content-MD5 you specified did not match what was received");
      }
      return await this.metadata.addVersion(key, location, {
        versionId,
        size,
        md5,
        contentType: options.contentType ?? null,
        contentEncoding: options.contentEncoding ?? null,
        contentDisposition: options.contentDisposition ?? null,
        lastModified: this.clock(),
      });
    } catch (err) {
      await this.pool.query("DELETE FROM file_chunks WHERE version_id = $1", [versionId]).catch(() => undefined);
      throw err;
    }
  }

  head(key: string): Promise<FileVersion | undefined> {
    return this.metadata.newest(key);
  }

  async read(key: string, range?: ByteRange): Promise<{ version: FileVersion; stream: Readable } | undefined> {
    const version = await this.head(key);
    if (!version) return undefined;
    const start = range?.start ?? 0;
    const end = Math.min(range?.end ?? version.size - 1, version.size - 1);
    return { version, stream: Readable.from(this.chunks(version.versionId, start, end), { objectMode: false }) };
  }

  /** The bytes `start..end` (inclusive) of a version, one chunk row at a time. */
  private async *chunks(versionId: string, start: number, end: number): AsyncGenerator<Buffer> {
    if (end < start) return;
    const last = Math.floor(end / FILE_CHUNK_BYTES);
    for (let seq = Math.floor(start / FILE_CHUNK_BYTES); seq <= last; seq++) {
      const { rows } = await this.pool.query<{ data: Buffer }>(
        "SELECT data FROM file_chunks WHERE version_id = $1 AND seq = $2",
        [versionId, seq],
      );
      // A removal while the file streams ends it early; the reader sees a short body, as with a deleted blob.
      const data = rows[0]?.data;
      if (!data) return;
      const offset = seq * FILE_CHUNK_BYTES;
      yield data.subarray(Math.max(0, start - offset), Math.min(data.length, end - offset + 1));
    }
  }

  list(query: ListQuery): Promise<FileVersion[]> {
    return this.metadata.list(query);
  }

  versions(key: string): Promise<FileVersion[]> {
    return this.metadata.versions(key);
  }

  async remove(key: string, allVersions: boolean): Promise<number> {
    const removed = await this.metadata.removeVersions(key, allVersions);
    // Chunks go after the metadata: a failure in between leaves chunks to sweep, never a version without bytes.
    if (removed.length > 0) await this.pool.query("DELETE FROM file_chunks WHERE version_id = ANY($1)", [removed]);
    return removed.length;
  }
}
