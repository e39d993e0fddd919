import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  EXPORT_CHUNK_BYTES,
  PgExportFiles,
  exportMigrations,
  exportPgMigrations,
  localExportFiles,
  type ExportFiles,
} from "../../src/observations/index.js";
import { storeBackends } from "../support/backends.js";

/**
 * One contract for where export files live: the node's disk, or the database a cluster shares,
 * where a file one node wrote must download from another (the pair: two pools on one database,
 * two handles on one data dir).
 */
const dirs: string[] = [];
/** One data dir per SQLite pair: both "processes" of a pair share it, as one node's would. */
let sqliteDir: string | undefined;
const backends = storeBackends<ExportFiles>({
  sqlite: {
    migrations: exportMigrations,
    store: () => {
      if (sqliteDir === undefined) {
        sqliteDir = mkdtempSync(join(tmpdir(), "dms-export-files-"));
        dirs.push(sqliteDir);
      }
      return localExportFiles(sqliteDir);
    },
  },
  pg: { migrations: exportPgMigrations, store: (pool) => new PgExportFiles(pool) },
});

afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

async function bytesOf(stream: Readable): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const part of stream) parts.push(part as Buffer);
  return Buffer.concat(parts);
}

/** Writes `data` as the execution's file, in uneven pieces, and commits it. */
async function write(files: ExportFiles, executionId: string, data: Buffer): Promise<void> {
  const out = files.create(executionId);
  const pieces: Buffer[] = [];
  for (let at = 0; at < data.length; at += 65_537) pieces.push(data.subarray(at, at + 65_537));
  await pipeline(Readable.from(pieces), out.stream);
  await out.commit();
}

describe.each(backends)("export files contract: $name", (backend) => {
  let files: ExportFiles;
  let other: ExportFiles;
  const data = randomBytes(2 * EXPORT_CHUNK_BYTES + 4321);
  beforeAll(async () => {
    [files, other] = await backend.openPair();
  });
  afterAll(() => backend.close());

  it("reads back a committed file over several chunks, with its size, from the other process too", async () => {
    await write(files, "e1", data);
    expect(await files.size("e1")).toBe(data.length);
    const here = (await files.open("e1"))!;
    expect(here.size).toBe(data.length);
    expect((await bytesOf(here.stream)).equals(data)).toBe(true);
    const there = (await other.open("e1"))!;
    expect((await bytesOf(there.stream)).equals(data)).toBe(true);
  });

  it("shows nothing of a file until it is committed, and nothing after an abort", async () => {
    const out = files.create("e2");
    await pipeline(Readable.from([data.subarray(0, 1000)]), out.stream);
    expect(await other.size("e2")).toBeUndefined();
    expect(await other.open("e2")).toBeUndefined();
    await out.abort();
    expect(await files.size("e2")).toBeUndefined();
  });

  it("replaces a file written again, and removes it from every process", async () => {
    await write(files, "e3", data);
    const second = Buffer.from("a short second file");
    await write(other, "e3", second);
    expect(await files.size("e3")).toBe(second.length);
    expect((await bytesOf((await files.open("e3"))!.stream)).toString()).toBe("a short second file");
    await other.remove("e3");
    expect(await files.size("e3")).toBeUndefined();
    expect(await files.open("e3")).toBeUndefined();
    await files.remove("never-written");
  });

  it("keeps an empty file", async () => {
    await write(files, "e4", Buffer.alloc(0));
    expect(await other.size("e4")).toBe(0);
    expect((await bytesOf((await other.open("e4"))!.stream)).length).toBe(0);
  });
});
