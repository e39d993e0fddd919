import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestDms } from "../support/dms.js";
import { json, type Payload } from "../support/http.js";
import { startFilesDms } from "./support.js";

let t: TestDms & { advance(ms: number): void };
const put = (key: string, data = key) => t.dms.services.files.store.put(key, Readable.from([Buffer.from(data)]));

beforeAll(async () => {
  t = await startFilesDms();
  // 2,500 files in one thing's folder, written through the store to keep the setup fast.
  for (let i = 0; i < 2500; i++) await put(`things/t2/f${String(i).padStart(5, "0")}.txt`);
  await put("public/readme.txt");
  await put("root/system.cfg");
  await put("things/t1/a.txt");
  await put("things/e1/b.txt");
  await put("thing-types/10/manual.pdf");
  await put("thing-types/20/meter.pdf");
});
afterAll(() => t.close());

const list = async (params: string, user = "alice") => {
  const res = await t.call("GET", `/files?${params}`, { user });
  return { status: res.status, body: (await json(res)) as Payload };
};

describe("LIST", () => {
  it("lists 2,500 files in pages of 1,000 with continuation tokens", async () => {
    const keys: string[] = [];
    let token: string | undefined;
    const pages: Payload[] = [];
    do {
      const params = `thingName=t2${token ? `&continuationToken=${encodeURIComponent(token)}` : ""}`;
      const { status, body } = await list(params);
      expect(status).toBe(200);
      pages.push(body);
      keys.push(...body.files.map((f: Payload) => f.Key));
      token = body.nextContinuationToken;
    } while (token);
    expect(pages.map((p) => p.keyCount)).toEqual([1000, 1000, 500]);
    expect(pages.map((p) => p.isTruncated)).toEqual([true, true, false]);
    expect(pages.every((p) => p.maxKeys === 1000 && p.encodingType === "url")).toBe(true);
    expect(pages[0].continuationToken).toBeUndefined();
    expect(pages[1].continuationToken).toBe(pages[0].nextContinuationToken);
    expect(pages[2].nextContinuationToken).toBeUndefined();
    expect(new Set(keys).size).toBe(2500);
    expect(keys).toEqual([...keys].sort());
    expect(keys[0]).toBe("things/t2/f00000.txt");
  });

  it("answers file entries with Key, LastModified, ETag, Size and a signed url", async () => {
    const { body } = await list("thingName=t1");
    expect(body.files).toEqual([
      {
        Key: "things/t1/a.txt",
        LastModified: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        ETag: expect.stringMatching(/^"[0-9a-f]{32}"$/),
        Size: "things/t1/a.txt".length,
        url: expect.stringContaining("/storage/files/things/t1/a.txt?"),
      },
    ]);
    const res = await fetch(body.files[0].url);
    expect(await res.text()).toBe("things/t1/a.txt");
  });

  it("filters by name prefix inside the folder and honours maxKeys", async () => {
    const { body } = await list("thingName=t2&prefix=f0001&maxKeys=5");
    expect(body.prefix).toBe("f0001");
    expect(body.files.map((f: Payload) => f.Key)).toEqual([
      "things/t2/f00010.txt",
      "things/t2/f00011.txt",
      "things/t2/f00012.txt",
      "things/t2/f00013.txt",
      "things/t2/f00014.txt",
    ]);
    expect(body.isTruncated).toBe(true);
    const next = await list(
      `thingName=t2&prefix=f0001&maxKeys=5&continuationToken=${encodeURIComponent(body.nextContinuationToken)}`,
    );
    expect(next.body.files.map((f: Payload) => f.Key)[0]).toBe("things/t2/f00015.txt");
  });

  it("lists public files with public=true and the thing type's files with thingType", async () => {
    expect((await list("public=true")).body.files.map((f: Payload) => f.Key)).toEqual(["public/readme.txt"]);
    expect((await list("thingType=10")).body.files.map((f: Payload) => f.Key)).toEqual(["thing-types/10/manual.pdf"]);
    expect((await list("root=true", "admin")).body.files.map((f: Payload) => f.Key)).toEqual(["root/system.cfg"]);
  });

  it("listAll lists every non-public file the caller may read, with folder, thingName, thingType", async () => {
    const { body } = await list("listAll=true&maxKeys=1000", "eastie");
    expect(body.files.map((f: Payload) => [f.Key, f.folder, f.thingName, f.thingType])).toEqual([
      ["thing-types/20/meter.pdf", "thing-types", undefined, "20"],
      ["things/e1/b.txt", "things", "e1", undefined],
    ]);
    const admin = await list("listAll=true&prefix=m", "admin");
    expect(admin.body.files.map((f: Payload) => f.Key)).toEqual([
      "thing-types/10/manual.pdf",
      "thing-types/20/meter.pdf",
    ]);
    const all = await list("listAll=true&prefix=s", "admin");
    expect(all.body.files.map((f: Payload) => [f.Key, f.folder])).toEqual([["root/system.cfg", "root"]]);
  });

  it("listAll pages across folders", async () => {
    const keys: string[] = [];
    let token: string | undefined;
    do {
      const { body } = await list(`listAll=true${token ? `&continuationToken=${encodeURIComponent(token)}` : ""}`);
      keys.push(...body.files.map((f: Payload) => f.Key));
      token = body.nextContinuationToken;
    } while (token);
    // alice sees t1, t2, e1 and types 10 and 20, but neither root nor public.
    expect(keys).toHaveLength(2500 + 4);
    expect(new Set(keys).size).toBe(keys.length);
    expect(keys.some((k) => k.startsWith("root/") || k.startsWith("public/"))).toBe(false);
  });

  it("issues a token with URI-reserved characters that round-trips URL-encoded, and tolerates a raw '+' turned into ' '", async () => {
    const { body } = await list("thingName=t2&maxKeys=3");
    const token: string = body.nextContinuationToken;
    expect(token).toMatch(/^[A-Za-z0-9+/=]+$/);
    const encoded = await list(`thingName=t2&maxKeys=3&continuationToken=${encodeURIComponent(token)}`);
    expect(encoded.body.files[0].Key).toBe("things/t2/f00003.txt");
    const raw = await list(`thingName=t2&maxKeys=3&continuationToken=${token}`);
    expect(raw.body.files[0].Key).toBe("things/t2/f00003.txt");
  });

  it("refuses a continuationToken it did not issue", async () => {
    const { status, body } = await list("thingName=t2&continuationToken=bm90LWEtdG9rZW4%3D");
    expect(status).toBe(400);
    expect(body).toMatchObject({ messageKey: "INVALID_ARGUMENTS", property: "continuationToken" });
  });

  it("refuses maxKeys outside 1-1000", async () => {
    for (const maxKeys of ["0", "1001", "-1", "abc", "1.5"]) {
      const { status, body } = await list(`thingName=t2&maxKeys=${maxKeys}`);
      expect(status, maxKeys).toBe(400);
      expect(body).toMatchObject({ messageKey: "INVALID_ARGUMENTS", property: "maxKeys" });
    }
  });
});

describe("exactly one folder selector", () => {
  const listCases = [
    "",
    "prefix=x",
    "public=true&root=true",
    "listAll=true&public=true",
    "listAll=true&thingName=t1",
    "thingName=t1&thingType=10",
    "root=true&thingType=10",
    "public=true&root=true&listAll=true&thingName=t1&thingType=10",
  ];
  it.each(listCases)("LIST with %j is INVALID_ARGUMENTS", async (params) => {
    const { status, body } = await list(params, "admin");
    expect(status).toBe(400);
    expect(body.messageKey).toBe("INVALID_ARGUMENTS");
    expect(body.message).toMatch(/Exactly one of listAll, public, root, thingName, thingType/);
  });

  it.each(["false", "1", "yes", ""])("a boolean given as %j is INVALID_ARGUMENTS", async (value) => {
    for (const name of ["public", "root", "listAll"]) {
      const { status, body } = await list(`${name}=${value}`, "admin");
      expect(status).toBe(400);
      expect(body).toMatchObject({ messageKey: "INVALID_ARGUMENTS", property: name });
    }
  });

  const oneCases = [
    "",
    "public=true&root=true",
    "thingName=t1&thingType=10",
    "public=true&thingName=t1",
    "root=true&thingType=10",
  ];
  for (const [method, path] of [
    ["GET", "/files/download-url"],
    ["GET", "/files/upload-url"],
    ["DELETE", "/files"],
  ] as const) {
    it.each(oneCases)(`${method} ${path} with %j is INVALID_ARGUMENTS`, async (params) => {
      const res = await t.call(method, `${path}?fileName=x.txt${params ? `&${params}` : ""}`, { user: "admin" });
      expect(res.status).toBe(400);
      expect((await json(res)).message).toMatch(/Exactly one of public, root, thingName, thingType/);
    });
  }

  it("fileName is required for download, upload and remove", async () => {
    for (const [method, path] of [
      ["GET", "/files/download-url?public=true"],
      ["GET", "/files/upload-url?public=true"],
      ["DELETE", "/files?public=true"],
    ] as const) {
      const res = await t.call(method, path, { user: "admin" });
      expect(res.status).toBe(400);
      expect(await json(res)).toMatchObject({ messageKey: "PROPERTY_REQUIRED", property: "fileName" });
    }
  });
});
