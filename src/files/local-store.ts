import { createHash, randomBytes } from "node:crypto";
import { createWriteStream, mkdirSync, readdirSync, rmSync } from "node:fs";
import { open, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { Transform, type Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
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

const CHUNK = 1024 * 1024;

export interface LocalFileStoreOptions {
  /** Where the versions are recorded. */
  metadata: FileMetadataStore;
  /** Directory for the objects (`objects/`) and in-flight uploads (`tmp/`). */
  dir: string;
  clock?: () => number;
}

/**
 * Objects on local disk, their metadata in a `FileMetadataStore`. Each version is its own file
 * named by its version id (never by the key, so no name can reach outside the store). A write
 * goes to `tmp/`, is renamed into `objects/` when complete and checked, and only then becomes
 * visible through its metadata: a crash at any point leaves no half file visible, at worst an
 * orphan that the next start sweeps away.
 */
export class LocalFileStore implements FileStore {
  private readonly metadata: FileMetadataStore;
  private readonly dir: string;
  private readonly objects: string;
  private readonly tmp: string;
  private readonly clock: () => number;
  /** The start's sweep of orphans: a write waits for it, so that its new blob is not taken for one. */
  private readonly swept: Promise<void>;

  constructor(options: LocalFileStoreOptions) {
    this.metadata = options.metadata;
    this.clock = options.clock ?? Date.now;
    this.dir = options.dir;
    this.objects = join(options.dir, "objects");
    this.tmp = join(options.dir, "tmp");
    mkdirSync(this.objects, { recursive: true });
    rmSync(this.tmp, { recursive: true, force: true });
    mkdirSync(this.tmp, { recursive: true });
    this.swept = this.sweepOrphans();
    // A failed sweep fails the writes that wait for it, not the process.
    this.swept.catch(() => undefined);
  }

  async put(key: string, body: Readable, options: PutOptions = {}): Promise<FileVersion> {
    const location = parseKey(key);
    if (!location) throw new Error(`not a file key: ${key}`);
    await this.swept;
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
      return await this.metadata.addVersion(key, location, {
        versionId,
        size,
        md5,
        contentType: options.contentType ?? null,
        contentEncoding: options.contentEncoding ?? null,
        contentDisposition: options.contentDisposition ?? null,
        lastModified: this.clock(),
      });
    } finally {
      await rm(tmpFile, { force: true });
    }
  }

  head(key: string): Promise<FileVersion | undefined> {
    return this.metadata.newest(key);
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

  list(query: ListQuery): Promise<FileVersion[]> {
    return this.metadata.list(query);
  }

  versions(key: string): Promise<FileVersion[]> {
    return this.metadata.versions(key);
  }

  async remove(key: string, allVersions: boolean): Promise<number> {
    await this.swept;
    const removed = await this.metadata.removeVersions(key, allVersions);
    // Blobs go after the metadata: a crash in between leaves orphans, never a version without its bytes.
    await Promise.all(removed.map((id) => rm(this.blobPath(id), { force: true })));
    return removed.length;
  }

  private blobPath(versionId: string): string {
    return localBlobPath(this.dir, versionId);
  }

  /** Blobs without a recorded version are left by a crash between rename and record (or removal and unlink). */
  private async sweepOrphans(): Promise<void> {
    const known = await this.metadata.versionIds();
    for (const shard of readdirSync(this.objects)) {
      for (const id of readdirSync(join(this.objects, shard))) {
        if (!known.has(id)) rmSync(join(this.objects, shard, id), { force: true });
      }
    }
  }
}

/** Where a `LocalFileStore` on `dir` keeps the bytes of a version: `objects/`, sharded by the id's first two characters. */
export function localBlobPath(dir: string, versionId: string): string {
  return join(dir, "objects", versionId.slice(0, 2), versionId);
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
