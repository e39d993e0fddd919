import { open } from "node:fs/promises";
import type pg from "pg";
import { FILE_CHUNK_BYTES, localBlobPath } from "../files/index.js";
import type { Db } from "../store/index.js";
import { StoreCopyError } from "./errors.js";

/** Versions read from `file_versions` per query: the table is paged, never held whole. */
const PAGE = 500;

interface VersionRow {
  seq: number;
  key: string;
  version_id: string;
  size: number;
}

/**
 * Copies the bytes of every file version from the data directory's `files/` (as `LocalFileStore`
 * keeps them) into `file_chunks` as `PgFileStore` reads them: chunk n holds bytes from
 * n × FILE_CHUNK_BYTES, one chunk in memory at a time. A version whose bytes are missing or of
 * another size than recorded stops the copy. Answers the bytes copied.
 */
export async function copyFileContents(
  service: Db,
  filesDir: string,
  target: pg.PoolClient,
  log: (line: string) => void,
): Promise<number> {
  const page = service.prepare<[number, number], VersionRow>(
    "SELECT seq, key, version_id, size FROM file_versions WHERE seq > ? ORDER BY seq LIMIT ?",
  );
  const buffer = Buffer.alloc(FILE_CHUNK_BYTES);
  let bytes = 0;
  let versions = 0;
  for (let after = 0; ;) {
    const rows = page.all(after, PAGE);
    if (rows.length === 0) break;
    for (const version of rows) {
      bytes += await copyVersion(filesDir, version, buffer, target);
      versions++;
    }
    after = rows[rows.length - 1]!.seq;
  }
  log(`file contents: ${versions} versions, ${bytes} bytes`);
  return bytes;
}

async function copyVersion(
  filesDir: string,
  version: VersionRow,
  buffer: Buffer,
  target: pg.PoolClient,
): Promise<number> {
  const path = localBlobPath(filesDir, version.version_id);
  const file = await open(path, "r").catch((err: NodeJS.ErrnoException) => {
    throw new StoreCopyError(
      `the contents of ${version.key} (version ${version.version_id}) are missing: ${err.message}`,
    );
  });
  try {
    const { size } = await file.stat();
    if (size !== version.size) {
      throw new StoreCopyError(
        `the contents of ${version.key} (version ${version.version_id}) are ${size} bytes, ${version.size} recorded`,
      );
    }
    for (let seq = 0; seq * FILE_CHUNK_BYTES < size; seq++) {
      const start = seq * FILE_CHUNK_BYTES;
      const length = Math.min(FILE_CHUNK_BYTES, size - start);
      for (let filled = 0; filled < length;) {
        const { bytesRead } = await file.read(buffer, filled, length - filled, start + filled);
        if (bytesRead === 0) throw new StoreCopyError(`${path} ended before its recorded size`);
        filled += bytesRead;
      }
      await target.query("INSERT INTO file_chunks (version_id, seq, data) VALUES ($1, $2, $3)", [
        version.version_id,
        seq,
        buffer.subarray(0, length),
      ]);
    }
    return size;
  } finally {
    await file.close();
  }
}
