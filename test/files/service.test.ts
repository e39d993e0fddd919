import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { text } from "node:stream/consumers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LocalFileStore, SqliteFileMetadataStore, createFiles, type Files } from "../../src/files/index.js";
import { openParts, refusal, type Parts } from "../support/parts.js";

/** Files made from their parts: bytes on local disk, metadata on SQLite (no service, no HTTP). */

let parts: Parts;
let dataDir: string;
let files: Files;

/** A start of the file store over `dataDir`: each call is a process starting on the same disk and database. */
const deps = () => ({
  ...parts,
  store: new LocalFileStore({ metadata: new SqliteFileMetadataStore(parts.db), dir: join(dataDir, "files") }),
});
const body = (s: string) => Readable.from([Buffer.from(s)]);

beforeAll(async () => {
  parts = await openParts();
  dataDir = mkdtempSync(join(tmpdir(), "dms-files-unit-"));
  files = createFiles(deps());
});
afterAll(async () => {
  await parts.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe("files: the service over the local store and SQLite metadata", () => {
  it("a folder is the thing's or type's domain's: upload URLs need Files.CREATE there", async () => {
    expect(await refusal(() => files.uploadUrl(parts.as("eastie"), { thingName: "t1" }, "fw.bin", {}))).toBe(
      "NOT_AUTHORIZED",
    );
    expect(await refusal(() => files.uploadUrl(parts.as("reader"), { thingName: "t1" }, "fw.bin", {}))).toBe(
      "NOT_AUTHORIZED",
    );
    expect(files.uploadUrl(parts.as("alice"), { thingName: "t1" }, "fw.bin", {}).fileName).toBe("things/t1/fw.bin");
  });

  it("keeps versions: the newest is read and listed, a removal drops it and the one before shows again", async () => {
    await files.store.put("things/t1/fw.bin", body("one"));
    await files.store.put("things/t1/fw.bin", body("two"));
    await files.store.put("things/e1/log.txt", body("east"));
    const read = await files.store.read("things/t1/fw.bin");
    expect(await text(read!.stream)).toBe("two");
    const listed = await files.list(parts.as("eastie"), { listAll: "true", maxKeys: 10 });
    expect(listed.files.map((f) => f.Key)).toEqual(["things/e1/log.txt"]);
    expect(await files.store.remove("things/t1/fw.bin", false)).toBe(1);
    expect(await text((await files.store.read("things/t1/fw.bin"))!.stream)).toBe("one");
    expect((await files.store.versions("things/t1/fw.bin")).length).toBe(1);
  });

  it("a new start sweeps the bytes no version records, and keeps those it does", async () => {
    const stray = join(dataDir, "files", "objects", "ff");
    mkdirSync(stray, { recursive: true });
    writeFileSync(join(stray, "ff00-left-by-a-crash"), "orphan");
    const again = createFiles(deps());
    // The sweep runs before the first write: a write waits for it.
    await again.store.put("things/t2/new.bin", body("new"));
    expect(readdirSync(stray)).toEqual([]);
    expect(await text((await again.store.read("things/t1/fw.bin"))!.stream)).toBe("one");
  });
});
