import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  FILE_CHUNK_BYTES,
  LocalFileStore,
  PgFileMetadataStore,
  PgFileStore,
  PutError,
  SqliteFileMetadataStore,
  filesMigrations,
  filesPgMigrations,
  type FileStore,
} from "../../src/files/index.js";
import type { PgPool } from "../../src/store/index.js";
import { storeBackends } from "../support/backends.js";

/**
 * One contract for where file contents live: on the node's disk (`LocalFileStore`) or in the
 * shared database (`PgFileStore`, every node of a cluster serving every file).
 */
const dirs: string[] = [];
const pools: PgPool[] = [];
const backends = storeBackends<FileStore>({
  sqlite: {
    migrations: filesMigrations,
    store: (db) => {
      const dir = mkdtempSync(join(tmpdir(), "dms-files-"));
      dirs.push(dir);
      return new LocalFileStore({ metadata: new SqliteFileMetadataStore(db), dir });
    },
  },
  pg: {
    migrations: filesPgMigrations,
    store: (pool) => {
      pools.push(pool);
      return new PgFileStore({ pool, metadata: new PgFileMetadataStore(pool) });
    },
  },
});

afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

async function bytesOf(stream: Readable): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const part of stream) parts.push(part as Buffer);
  return Buffer.concat(parts);
}

/** A body delivered in uneven pieces, as a socket delivers it. */
function body(data: Buffer): Readable {
  const pieces: Buffer[] = [];
  for (let at = 0; at < data.length; at += 65_537) pieces.push(data.subarray(at, at + 65_537));
  return Readable.from(pieces);
}

describe.each(backends)("file store contract: $name", (backend) => {
  let store: FileStore;
  const data = randomBytes(3 * FILE_CHUNK_BYTES + 12_345);
  beforeAll(async () => {
    store = await backend.open();
  });
  afterAll(() => backend.close());

  it("stores a body over several chunks and reads it back whole, with its size and MD5", async () => {
    const version = await store.put("things/t1/big.bin", body(data), { contentType: "application/octet-stream" });
    expect(version.size).toBe(data.length);
    expect(version.md5).toBe(createHash("md5").update(data).digest("hex"));
    const read = await store.read("things/t1/big.bin");
    expect(read?.version.versionId).toBe(version.versionId);
    expect((await bytesOf(read!.stream)).equals(data)).toBe(true);
  });

  it("reads a byte range across a chunk boundary, and one inside a chunk", async () => {
    const start = FILE_CHUNK_BYTES - 10;
    const end = 2 * FILE_CHUNK_BYTES + 5;
    const across = await store.read("things/t1/big.bin", { start, end });
    expect((await bytesOf(across!.stream)).equals(data.subarray(start, end + 1))).toBe(true);
    const inside = await store.read("things/t1/big.bin", { start: 7, end: 7 });
    expect((await bytesOf(inside!.stream)).equals(data.subarray(7, 8))).toBe(true);
  });

  it("refuses a body whose MD5 differs, or over the limit, and leaves no version", async () => {
    await expect(
      store.put("things/t1/bad.bin", body(Buffer.from("hello")), { contentMD5: "AAAAAAAAAAAAAAAAAAAAAA==" }),
    ).rejects.toMatchObject({ reason: "BAD_DIGEST" });
    await expect(store.put("things/t1/bad.bin", body(data), { maxBytes: 1000 })).rejects.toBeInstanceOf(PutError);
    expect(await store.head("things/t1/bad.bin")).toBeUndefined();
  });

  it("keeps versions newest first; removing the newest uncovers the one before, all removes the file", async () => {
    const first = await store.put("public/notes.txt", body(Buffer.from("one")));
    const second = await store.put("public/notes.txt", body(Buffer.from("two!")));
    expect((await store.versions("public/notes.txt")).map((v) => v.versionId)).toEqual([
      second.versionId,
      first.versionId,
    ]);
    expect(await store.remove("public/notes.txt", false)).toBe(1);
    const read = await store.read("public/notes.txt");
    expect((await bytesOf(read!.stream)).toString()).toBe("one");
    expect(await store.remove("public/notes.txt", true)).toBe(1);
    expect(await store.read("public/notes.txt")).toBeUndefined();
  });

  it("stores an empty body", async () => {
    const version = await store.put("public/empty.txt", body(Buffer.alloc(0)));
    expect(version.size).toBe(0);
    expect((await bytesOf((await store.read("public/empty.txt"))!.stream)).length).toBe(0);
  });

  it.runIf(backend.name === "PostgreSQL")(
    "sweeps the chunks of an upload that died, not of one in flight",
    async () => {
      const pool = pools.at(-1)!;
      await pool.query(
        "INSERT INTO file_chunks (version_id, seq, data, written_at) VALUES ('dead', 0, '\\x00', now() - interval '2 hours'), ('live', 0, '\\x00', now())",
      );
      expect(await (store as PgFileStore).sweepAbandoned()).toBe(1);
      const { rows } = await pool.query<{ version_id: string }>(
        "SELECT DISTINCT version_id FROM file_chunks WHERE version_id IN ('dead', 'live')",
      );
      expect(rows.map((r) => r.version_id)).toEqual(["live"]);
    },
  );
});
