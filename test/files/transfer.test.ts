import { readdirSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestDms } from "../support/dms.js";
import { json } from "../support/http.js";
import { downloadUrl, md5Base64, md5Hex, startFilesDms, upload, uploadUrl } from "./support.js";

let t: TestDms & { advance(ms: number): void };
beforeAll(async () => {
  t = await startFilesDms();
});
afterAll(() => t.close());

async function waitFor(done: () => boolean, ms = 5000): Promise<void> {
  const until = Date.now() + ms;
  while (!done()) {
    if (Date.now() > until) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 20));
  }
}

const get = async (params: Record<string, string>, headers: Record<string, string> = {}) =>
  fetch(await downloadUrl(t, params), { headers });

describe("upload and download through signed URLs", () => {
  it("uploads without bound headers and downloads with ETag, Content-Length, Last-Modified", async () => {
    const res = await upload(t, { thingName: "t1", fileName: "logs/boot.txt" }, "hello, world");
    expect(res.status).toBe(200);
    expect(res.headers.get("etag")).toBe(`"${md5Hex("hello, world")}"`);

    const down = await get({ thingName: "t1", fileName: "logs/boot.txt" });
    expect(down.status).toBe(200);
    expect(await down.text()).toBe("hello, world");
    expect(down.headers.get("etag")).toBe(`"${md5Hex("hello, world")}"`);
    expect(down.headers.get("content-length")).toBe("12");
    expect(down.headers.get("content-type")).toBe("application/octet-stream");
    expect(new Date(down.headers.get("last-modified")!).getTime()).toBeGreaterThan(Date.now() - 60_000);
    expect(down.headers.get("accept-ranges")).toBe("bytes");
  });

  it("answers the download-url and upload-url with the file's path and a URL on /storage/files/", async () => {
    const res = await t.call("GET", "/files/download-url?thingName=t1&fileName=logs/boot.txt", { user: "alice" });
    const body = await json(res);
    expect(body.fileName).toBe("things/t1/logs/boot.txt");
    expect(body.url).toContain(`${t.url}/storage/files/things/t1/logs/boot.txt?`);
  });

  it("requires the bound headers with the same values on the PUT", async () => {
    const data = '{"a":1}';
    const params = {
      thingType: "10",
      fileName: "config.json",
      contentType: "application/json",
      contentDisposition: 'attachment; filename="config.json"',
      contentEncoding: "identity",
      contentMD5: md5Base64(data),
    };
    const url = await uploadUrl(t, params);
    const bound = {
      "content-type": params.contentType,
      "content-disposition": params.contentDisposition,
      "content-encoding": params.contentEncoding,
      "content-md5": params.contentMD5,
    };

    const without = await fetch(url, { method: "PUT", body: data });
    expect(without.status).toBe(403);
    expect((await json(without)).message).toMatch(/must carry the signed header\(s\) .*content-disposition/);

    const wrongType = await fetch(url, {
      method: "PUT",
      body: data,
      headers: { ...bound, "content-type": "text/plain" },
    });
    expect(wrongType.status).toBe(403);
    expect((await json(wrongType)).message).toMatch(/signature does not match/);

    const ok = await fetch(url, { method: "PUT", body: data, headers: bound });
    expect(ok.status).toBe(200);

    const down = await get({ thingType: "10", fileName: "config.json" });
    expect(await down.text()).toBe(data);
    expect(down.headers.get("content-type")).toBe("application/json");
    expect(down.headers.get("content-disposition")).toBe('attachment; filename="config.json"');
  });

  it("refuses a body whose MD5 differs from the bound Content-MD5 and stores nothing", async () => {
    const url = await uploadUrl(t, { public: "true", fileName: "md5.txt", contentMD5: md5Base64("expected") });
    const res = await fetch(url, {
      method: "PUT",
      body: "something else",
      headers: { "content-md5": md5Base64("expected") },
    });
    expect(res.status).toBe(400);
    expect(await json(res)).toMatchObject({
      messageKey: "INVALID_ARGUMENTS",
      message: expect.stringMatching(/Content-MD5/),
    });
    expect((await get({ public: "true", fileName: "md5.txt" })).status).toBe(404);
    expect(readdirSync(join(t.dataDir, "files", "tmp"))).toEqual([]);
  });

  it("refuses an unbound Content-MD5 that does not match too", async () => {
    const url = await uploadUrl(t, { public: "true", fileName: "md5b.txt" });
    const res = await fetch(url, { method: "PUT", body: "abc", headers: { "content-md5": md5Base64("abd") } });
    expect(res.status).toBe(400);
  });

  it("refuses a contentMD5 that is not a base64 MD5 when the URL is made", async () => {
    const res = await t.call("GET", "/files/upload-url?public=true&fileName=x&contentMD5=abc", { user: "alice" });
    expect(res.status).toBe(400);
    expect(await json(res)).toMatchObject({ messageKey: "INVALID_ARGUMENTS", property: "contentMD5" });
  });

  it("streams an upload larger than the REST body limit", async () => {
    const big = Buffer.alloc(6 * 1024 * 1024, 7);
    const res = await upload(t, { root: "true", fileName: "big.bin" }, big, "admin");
    expect(res.status).toBe(200);
    const down = await fetch(await downloadUrl(t, { root: "true", fileName: "big.bin" }, "admin"));
    expect(Buffer.from(await down.arrayBuffer()).equals(big)).toBe(true);
  });

  it("keeps nothing of an upload the client abandons midway", async () => {
    const url = await uploadUrl(t, { public: "true", fileName: "partial.bin" });
    await new Promise<void>((resolve) => {
      const req = request(url, { method: "PUT", headers: { "content-length": "1000000" } });
      req.on("error", () => resolve());
      req.write(Buffer.alloc(10_000, 1), () => setTimeout(() => req.destroy(), 100));
    });
    await waitFor(() => readdirSync(join(t.dataDir, "files", "tmp")).length === 0);
    expect((await get({ public: "true", fileName: "partial.bin" })).status).toBe(404);
  });

  it("counts transferred bytes in the metrics", async () => {
    const metrics = await (await fetch(`${t.url}/metrics`)).text();
    expect(metrics).toMatch(/dms_file_transfer_bytes_total\{direction="upload"\} [1-9]/);
    expect(metrics).toMatch(/dms_file_transfer_bytes_total\{direction="download"\} [1-9]/);
  });

  it("answers 404 FILE_NOT_FOUND for a signed URL of a file that is not there", async () => {
    const res = await get({ public: "true", fileName: "never-uploaded" });
    expect(res.status).toBe(404);
    expect((await json(res)).messageKey).toBe("FILE_NOT_FOUND");
  });
});

describe("ranges and conditional requests", () => {
  const params = { thingName: "t2", fileName: "digits.txt" };
  beforeAll(async () => {
    expect((await upload(t, params, "0123456789")).status).toBe(200);
  });

  it("serves a byte range with 206 and Content-Range", async () => {
    const res = await get(params, { range: "bytes=2-5" });
    expect(res.status).toBe(206);
    expect(await res.text()).toBe("2345");
    expect(res.headers.get("content-range")).toBe("bytes 2-5/10");
    expect(res.headers.get("content-length")).toBe("4");
  });

  it("serves open-ended and suffix ranges", async () => {
    expect(await (await get(params, { range: "bytes=7-" })).text()).toBe("789");
    expect(await (await get(params, { range: "bytes=-3" })).text()).toBe("789");
    expect(await (await get(params, { range: "bytes=8-100" })).text()).toBe("89");
  });

  it("answers 416 for a range past the end", async () => {
    const res = await get(params, { range: "bytes=10-" });
    expect(res.status).toBe(416);
    expect(res.headers.get("content-range")).toBe("bytes */10");
  });

  it("ignores a malformed or multi-part Range and sends the whole file", async () => {
    const res = await get(params, { range: "bytes=0-1,4-5" });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("0123456789");
  });

  it("answers 304 for a matching If-None-Match and 200 for another ETag", async () => {
    const etag = `"${md5Hex("0123456789")}"`;
    const same = await get(params, { "if-none-match": etag });
    expect(same.status).toBe(304);
    expect(same.headers.get("etag")).toBe(etag);
    expect(await same.text()).toBe("");
    expect((await get(params, { "if-none-match": '"other"' })).status).toBe(200);
  });

  it("answers 304 for If-Modified-Since at or after Last-Modified", async () => {
    const first = await get(params);
    const res = await get(params, { "if-modified-since": first.headers.get("last-modified")! });
    expect(res.status).toBe(304);
  });

  it("honours If-Range: the range only while the ETag still matches", async () => {
    const etag = `"${md5Hex("0123456789")}"`;
    expect((await get(params, { range: "bytes=0-0", "if-range": etag })).status).toBe(206);
    expect((await get(params, { range: "bytes=0-0", "if-range": '"stale"' })).status).toBe(200);
  });
});

describe("versions", () => {
  it("keeps the old version on overwrite; REMOVE drops the newest and the previous comes back", async () => {
    const params = { thingName: "t1", fileName: "fw.bin" };
    await upload(t, params, "v1");
    await upload(t, params, "v2");
    expect(await (await get(params)).text()).toBe("v2");
    const versions = await t.dms.services.files.store.versions("things/t1/fw.bin");
    expect(versions.map((v) => v.size)).toEqual([2, 2]);

    const res = await t.call("DELETE", "/files?thingName=t1&fileName=fw.bin", { user: "alice" });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ fileName: "things/t1/fw.bin" });
    expect(await (await get(params)).text()).toBe("v1");
  });

  it("REMOVE with allVersions=true removes every version and their bytes", async () => {
    const params = { thingName: "t1", fileName: "all.bin" };
    for (const v of ["a", "b", "c"]) await upload(t, params, v);
    const ids = (await t.dms.services.files.store.versions("things/t1/all.bin")).map((v) => v.versionId);
    expect(ids).toHaveLength(3);

    const res = await t.call("DELETE", "/files?thingName=t1&fileName=all.bin&allVersions=true", { user: "alice" });
    expect(res.status).toBe(200);
    expect((await get(params)).status).toBe(404);
    expect(await t.dms.services.files.store.versions("things/t1/all.bin")).toEqual([]);
    const objects = readdirSync(join(t.dataDir, "files", "objects"), { recursive: true }).map(String);
    for (const id of ids) expect(objects.some((o) => o.endsWith(id))).toBe(false);
  });

  it("REMOVE of a file that is not there succeeds (idempotent, as S3)", async () => {
    const res = await t.call("DELETE", "/files?public=true&fileName=ghost", { user: "alice" });
    expect(res.status).toBe(200);
  });
});
