import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  PgFileMetadataStore,
  SqliteFileMetadataStore,
  filesMigrations,
  filesPgMigrations,
  keyOf,
  type FileLocation,
  type FileMetadataStore,
  type ListQuery,
} from "../../src/files/index.js";
import { storeBackends } from "../support/backends.js";

/** One contract, every implementation of the file metadata seam: what `LocalFileStore` and the file routes rely on. */
const backends = storeBackends<FileMetadataStore>({
  sqlite: { migrations: filesMigrations, store: (db) => new SqliteFileMetadataStore(db) },
  pg: { migrations: filesPgMigrations, store: (pool) => new PgFileMetadataStore(pool) },
});

let versions = 0;
/** Records a new version of the file at `location`; answers its version id. */
async function add(store: FileMetadataStore, location: FileLocation, size = 10): Promise<string> {
  const versionId = `v${++versions}`;
  await store.addVersion(keyOf(location), location, {
    versionId,
    size,
    md5: "9e107d9d372bb6826bd81d3542a419d6",
    contentType: "text/plain",
    contentEncoding: null,
    contentDisposition: null,
    lastModified: Date.parse("2026-03-01T10:00:00.000Z") + versions,
  });
  return versionId;
}

const names = (list: { key: string }[]): string[] => list.map((v) => v.key);

describe.each(backends)("file metadata store contract: $name", (backend) => {
  let store: FileMetadataStore;
  beforeAll(async () => {
    store = await backend.open();
  });
  afterAll(() => backend.close());

  it("records a version as the key's newest, in domain types, and keeps every version newest first", async () => {
    const at: FileLocation = { folder: "things", owner: "t1", name: "logs/a.txt" };
    const big = 5 * 2 ** 32;
    const stored = await store.addVersion("things/t1/logs/a.txt", at, {
      versionId: "first",
      size: big,
      md5: "d41d8cd98f00b204e9800998ecf8427e",
      contentType: null,
      contentEncoding: "gzip",
      contentDisposition: "attachment",
      lastModified: Date.parse("2026-03-01T10:00:00.123Z"),
    });
    expect(stored).toEqual({
      ...at,
      key: "things/t1/logs/a.txt",
      versionId: "first",
      size: big,
      md5: "d41d8cd98f00b204e9800998ecf8427e",
      contentType: null,
      contentEncoding: "gzip",
      contentDisposition: "attachment",
      lastModified: Date.parse("2026-03-01T10:00:00.123Z"),
    });
    expect(await store.newest("things/t1/logs/a.txt")).toEqual(stored);
    const second = await add(store, at);
    expect((await store.newest("things/t1/logs/a.txt"))?.versionId).toBe(second);
    expect((await store.versions("things/t1/logs/a.txt")).map((v) => v.versionId)).toEqual([second, "first"]);
    expect(await store.newest("things/t1/logs/none.txt")).toBeUndefined();
    expect(await store.versions("things/t1/logs/none.txt")).toEqual([]);
  });

  it("lists newest versions by key in byte order, by folder, owner, name prefix, continuation and limit", async () => {
    for (const name of ["b.txt", "B.txt", "_x.txt", "a/é.txt", "a/z.txt", "ab.txt"]) {
      await add(store, { folder: "public", owner: "", name });
    }
    await add(store, { folder: "public", owner: "", name: "b.txt" });
    await add(store, { folder: "things", owner: "t2", name: "a.txt" });
    await add(store, { folder: "things", owner: "t3", name: "a.txt" });
    await add(store, { folder: "thing-types", owner: "10", name: "a.txt" });
    const list = (q: Partial<ListQuery>): Promise<string[]> =>
      store.list({ folders: [{ folder: "public", owners: "*" }], namePrefix: "", limit: 100, ...q }).then(names);

    expect(await list({})).toEqual([
      "public/B.txt",
      "public/_x.txt",
      "public/a/z.txt",
      "public/a/é.txt",
      "public/ab.txt",
      "public/b.txt",
    ]);
    expect(await list({ namePrefix: "a" })).toEqual(["public/a/z.txt", "public/a/é.txt", "public/ab.txt"]);
    expect(await list({ namePrefix: "a/" })).toEqual(["public/a/z.txt", "public/a/é.txt"]);
    expect(await list({ after: "public/a/z.txt", limit: 2 })).toEqual(["public/a/é.txt", "public/ab.txt"]);
    const newestB = (await store.list({ folders: [{ folder: "public", owners: "*" }], namePrefix: "b", limit: 5 }))[0];
    expect(newestB?.versionId).toBe((await store.versions("public/b.txt"))[0]!.versionId);

    const things = (owners: string[] | "*"): Promise<string[]> =>
      list({ folders: [{ folder: "things", owners }], namePrefix: "a" });
    expect(await things(["t2"])).toEqual(["things/t2/a.txt"]);
    expect(await things(["t3", "t2", "t9"])).toEqual(["things/t2/a.txt", "things/t3/a.txt"]);
    expect(await things("*")).toEqual(["things/t2/a.txt", "things/t3/a.txt"]);
    expect(await things([])).toEqual([]);
    expect(
      await list({
        folders: [
          { folder: "thing-types", owners: ["10"] },
          { folder: "things", owners: ["t3"] },
        ],
        namePrefix: "a.",
      }),
    ).toEqual(["thing-types/10/a.txt", "things/t3/a.txt"]);
    expect(await list({ folders: [] })).toEqual([]);
  });

  it("removes the newest version (the one before becomes newest) or all, answering the ids dropped", async () => {
    const at: FileLocation = { folder: "root", owner: "", name: "r.bin" };
    const [v1, v2, v3] = [await add(store, at), await add(store, at), await add(store, at)];
    expect(await store.removeVersions("root/r.bin", false)).toEqual([v3]);
    expect((await store.newest("root/r.bin"))?.versionId).toBe(v2);
    expect(await store.removeVersions("root/r.bin", true)).toEqual([v2, v1]);
    expect(await store.newest("root/r.bin")).toBeUndefined();
    expect(await store.removeVersions("root/r.bin", true)).toEqual([]);
    const only = await add(store, at);
    expect(await store.removeVersions("root/r.bin", false)).toEqual([only]);
    expect(names(await store.list({ folders: [{ folder: "root", owners: "*" }], namePrefix: "", limit: 9 }))).toEqual(
      [],
    );
    const ids = await store.versionIds();
    expect(ids.has(v1) || ids.has(only)).toBe(false);
    expect(ids.has("first")).toBe(true);
  });

  it("versions of one key added at once: every one is kept, the newest is the last recorded", async () => {
    const at: FileLocation = { folder: "things", owner: "t4", name: "race.txt" };
    const added = await Promise.all(Array.from({ length: 10 }, () => add(store, at)));
    const all = await store.versions("things/t4/race.txt");
    expect(new Set(all.map((v) => v.versionId))).toEqual(new Set(added));
    expect((await store.newest("things/t4/race.txt"))?.versionId).toBe(all[0]!.versionId);
  });
});
