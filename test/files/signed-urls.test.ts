import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UrlSigner } from "../../src/signing/index.js";
import type { TestDms } from "../support/dms.js";
import { json } from "../support/http.js";
import { downloadUrl, startFilesDms, upload, uploadUrl } from "./support.js";

let t: TestDms & { advance(ms: number): void };
beforeAll(async () => {
  t = await startFilesDms();
  expect((await upload(t, { thingName: "t1", fileName: "secret.txt" }, "top secret")).status).toBe(200);
  expect((await upload(t, { thingName: "t1", fileName: "other.txt" }, "other")).status).toBe(200);
});
afterAll(() => t.close());

const expect403 = async (res: Response, message: RegExp) => {
  expect(res.status).toBe(403);
  const body = await json(res);
  expect(body.messageKey).toBe("FORBIDDEN");
  expect(body.message).toMatch(message);
};

describe("signed URLs: tampered, expired, other method", () => {
  it("refuses a URL whose path was changed", async () => {
    const url = await downloadUrl(t, { thingName: "t1", fileName: "secret.txt" });
    await expect403(await fetch(url.replace("secret.txt", "other.txt")), /signature does not match/);
  });

  it("refuses a URL whose expiry was pushed out", async () => {
    const url = new URL(await downloadUrl(t, { thingName: "t1", fileName: "secret.txt" }));
    url.searchParams.set("X-Dms-Expires", String(Number(url.searchParams.get("X-Dms-Expires")) + 3600));
    await expect403(await fetch(url), /signature does not match/);
  });

  it("refuses a changed signature, a missing signature and an added query parameter", async () => {
    const url = new URL(await downloadUrl(t, { thingName: "t1", fileName: "secret.txt" }));
    const bad = new URL(url);
    const sig = bad.searchParams.get("X-Dms-Signature")!;
    bad.searchParams.set("X-Dms-Signature", (sig[0] === "A" ? "B" : "A") + sig.slice(1));
    await expect403(await fetch(bad), /signature does not match/);

    const unsigned = new URL(url);
    unsigned.searchParams.delete("X-Dms-Signature");
    await expect403(await fetch(unsigned), /not signed/);

    const extra = new URL(url);
    extra.searchParams.set("response-content-type", "text/html");
    await expect403(await fetch(extra), /signature does not match/);
  });

  it("refuses a bare /storage/files/ path without any signature", async () => {
    await expect403(await fetch(`${t.url}/storage/files/things/t1/secret.txt`), /not signed/);
  });

  it("refuses a download URL used for PUT and an upload URL used for GET", async () => {
    const down = await downloadUrl(t, { thingName: "t1", fileName: "secret.txt" });
    await expect403(await fetch(down, { method: "PUT", body: "overwrite" }), /another method/);
    const up = await uploadUrl(t, { thingName: "t1", fileName: "secret.txt" });
    await expect403(await fetch(up), /another method/);
    const res = await fetch(await downloadUrl(t, { thingName: "t1", fileName: "secret.txt" }));
    expect(await res.text()).toBe("top secret");
  });

  it("refuses HEAD on a GET URL: the method is signed", async () => {
    const url = await downloadUrl(t, { thingName: "t1", fileName: "secret.txt" });
    expect((await fetch(url, { method: "HEAD" })).status).toBe(403);
  });

  it("is valid for 15 minutes: works at 14:59 and is refused as expired after 15:00", async () => {
    const down = await downloadUrl(t, { thingName: "t1", fileName: "secret.txt" });
    const up = await uploadUrl(t, { thingName: "t1", fileName: "late.txt" });
    t.advance(14 * 60_000 + 59_000 - 1000);
    expect((await fetch(down)).status).toBe(200);
    t.advance(2000);
    await expect403(await fetch(down), /expired at \d{4}-/);
    await expect403(await fetch(up, { method: "PUT", body: "late" }), /expired/);
  });
});

describe("file names", () => {
  const bad = [
    "../escape.txt",
    "a/../../escape.txt",
    "a/..",
    "./a",
    "/etc/passwd",
    "a//b",
    "dir/",
    "a\u0000b",
    "line\nbreak",
    "tab\there",
    "del\u007f",
    "x".repeat(1025),
    "é".repeat(513),
  ];
  it.each(bad.map((n) => [JSON.stringify(n).slice(0, 40), n]))("%s is INVALID_ARGUMENTS", async (_label, name) => {
    for (const path of ["/files/upload-url", "/files/download-url"]) {
      const res = await t.call("GET", `${path}?thingName=t1&fileName=${encodeURIComponent(name)}`, { user: "alice" });
      expect(res.status).toBe(400);
      expect(await json(res)).toMatchObject({ messageKey: "INVALID_ARGUMENTS", property: "fileName" });
    }
    const res = await t.call("DELETE", `/files?thingName=t1&fileName=${encodeURIComponent(name)}`, { user: "alice" });
    expect(res.status).toBe(400);
  });

  it("accepts 1024 bytes, nested folders and dots inside names", async () => {
    for (const name of ["x".repeat(1024), "a/b/c.tar.gz", "v1..2.txt", ".hidden", "spaces and ü.txt"]) {
      const res = await upload(t, { thingName: "t2", fileName: name }, "ok");
      expect(res.status, name).toBe(200);
    }
    const list = await json(await t.call("GET", "/files?thingName=t2&prefix=spaces", { user: "alice" }));
    expect(list.files[0].Key).toBe("things/t2/spaces and ü.txt");
    expect(await (await fetch(list.files[0].url)).text()).toBe("ok");
  });

  it("refuses transfer paths that are not the canonical encoding of a valid key, even when signed", async () => {
    const signer = t.dms.services.signer;
    const expiresAt = Date.now() + 60_000;
    for (const path of [
      "/storage/files/things/t1/..%2F..%2Fescape",
      "/storage/files/things/t1/a%2Fb",
      "/storage/files/things/t1/%2E%2E",
      "/storage/files/nowhere/x",
      "/storage/files/things/t1",
    ]) {
      const res = await fetch(signer.sign({ method: "PUT", path, expiresAt }), { method: "PUT", body: "x" });
      expect([400, 403], path).toContain(res.status);
    }
    // Nothing was written outside the objects of the store.
    expect(existsSync(join(t.dataDir, "escape"))).toBe(false);
    // The data dir's own entries: the databases, the file store, the provisioning file and the service keys.
    const allowed = [
      "device-secret-key",
      "dms.sqlite",
      "dms.sqlite-shm",
      "dms.sqlite-wal",
      "observations.sqlite",
      "observations.sqlite-shm",
      "observations.sqlite-wal",
      "files",
      "provision.json",
      "signing-key",
    ];
    for (const entry of readdirSync(t.dataDir)) expect(allowed).toContain(entry);
  });
});

describe("UrlSigner", () => {
  let now = 1_800_000_000_000;
  const signer = new UrlSigner({ key: Buffer.from("k".repeat(32)), baseUrl: "http://dms.test", clock: () => now });
  const request = (url: string, method: string, headers: Record<string, string> = {}) => {
    const u = new URL(url);
    return { method, path: u.pathname, query: u.searchParams, header: (n: string) => headers[n] };
  };

  it("signs method, path, expiry, bound headers and extra parameters, for reuse by other /storage/ areas", () => {
    const url = signer.sign({
      method: "GET",
      path: "/storage/exports/e1/part%201.csv.gz",
      expiresAt: now + 60_000,
      headers: { "Content-Type": "text/csv" },
      query: { executionId: "x1" },
    });
    expect(url.startsWith("http://dms.test/storage/exports/e1/part%201.csv.gz?")).toBe(true);
    expect(signer.verify(request(url, "GET", { "content-type": "text/csv" }))).toMatchObject({
      ok: true,
      signedHeaders: ["content-type"],
    });
    expect(signer.verify(request(url, "GET", { "content-type": "text/plain" })).ok).toBe(false);
    expect(signer.verify(request(url.replace("x1", "x2"), "GET", { "content-type": "text/csv" })).ok).toBe(false);
    now += 60_000;
    expect(signer.verify(request(url, "GET", { "content-type": "text/csv" }))).toMatchObject({
      ok: false,
      reason: /expired/,
    });
  });

  it("refuses to sign paths outside /storage/", () => {
    expect(() => signer.sign({ method: "GET", path: "/files", expiresAt: now })).toThrow();
  });

  it("a URL signed with another key does not verify", () => {
    const other = new UrlSigner({ key: Buffer.from("o".repeat(32)), baseUrl: "http://dms.test", clock: () => now });
    const url = other.sign({ method: "GET", path: "/storage/files/public/a", expiresAt: now + 1000 });
    expect(signer.verify(request(url, "GET")).ok).toBe(false);
  });
});
