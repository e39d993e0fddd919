import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestDms } from "../support/dms.js";
import { json } from "../support/http.js";
import { startFilesDms } from "./support.js";

let t: TestDms & { advance(ms: number): void };
beforeAll(async () => {
  t = await startFilesDms();
});
afterAll(() => t.close());

type Op = "list" | "download" | "upload" | "remove";
const PATH: Record<Op, [string, string]> = {
  list: ["GET", "/files?"],
  download: ["GET", "/files/download-url?fileName=f.txt&"],
  upload: ["GET", "/files/upload-url?fileName=f.txt&"],
  remove: ["DELETE", "/files?fileName=f.txt&"],
};
const call = async (user: string, op: Op, selector: string) => {
  const [method, path] = PATH[op];
  const res = await t.call(method, `${path}${selector}`, { user });
  return { status: res.status, body: await json(res) };
};
const OPS: Op[] = ["list", "download", "upload", "remove"];

describe("Files privileges on the domain that owns the folder", () => {
  // [user, selector, status per op (list, download, upload, remove), error key on failure (or one per op)]
  const cases: [string, string, number[], (string | string[])?][] = [
    ["alice", "thingName=t1", [200, 200, 200, 200]], // Files.* on acme, thing in acme
    ["alice", "thingName=e1", [200, 200, 200, 200]], // east is below acme
    ["alice", "thingType=10", [200, 200, 200, 200]],
    ["alice", "thingType=20", [200, 200, 200, 200]],
    ["alice", "public=true", [200, 200, 200, 200]], // home domain acme
    ["alice", "root=true", [403, 403, 403, 403], "NOT_AUTHORIZED_DOMAIN"],
    ["eastie", "thingName=e1", [200, 200, 200, 200]],
    ["eastie", "thingName=t1", [403, 403, 403, 403], "NOT_AUTHORIZED"], // t1 is in acme, above east
    ["eastie", "thingType=10", [403, 403, 403, 403], "NOT_AUTHORIZED"],
    ["eastie", "root=true", [403, 403, 403, 403], "NOT_AUTHORIZED_DOMAIN"],
    ["reader", "thingName=t1", [200, 200, 403, 403], "NOT_AUTHORIZED"], // role Read: no upload, no remove
    // A Read user asking for root: the folder refuses list and download, the role refuses upload and remove.
    [
      "reader",
      "root=true",
      [403, 403, 403, 403],
      ["NOT_AUTHORIZED_DOMAIN", "NOT_AUTHORIZED_DOMAIN", "NOT_AUTHORIZED", "NOT_AUTHORIZED"],
    ],
    ["nofiles", "thingName=t1", [403, 403, 403, 403], "NOT_AUTHORIZED"],
    ["nofiles", "public=true", [403, 403, 403, 403], "NOT_AUTHORIZED"],
    ["admin", "root=true", [200, 200, 200, 200]],
    ["admin", "thingName=e1", [200, 200, 200, 200]],
  ];

  it.each(cases)("%s with %s", async (user, selector, statuses, key) => {
    for (const [i, op] of OPS.entries()) {
      const { status, body } = await call(user, op, selector);
      const expected = statuses[i]!;
      expect(status, `${op}: ${JSON.stringify(body)}`).toBe(expected);
      if (expected === 403) {
        const want = Array.isArray(key) ? key[i] : key;
        expect(body.messageKey, op).toBe(want);
        if (want === "NOT_AUTHORIZED_DOMAIN") expect(body.property).toBe("domain");
      }
    }
  });

  it("answers THING_NOT_FOUND and THING_TYPE_NOT_FOUND for unknown folders", async () => {
    for (const op of OPS) {
      const thing = await call("admin", op, "thingName=nope");
      expect(thing.status).toBe(404);
      expect(thing.body).toMatchObject({ messageKey: "THING_NOT_FOUND", property: "thingName" });
      const type = await call("admin", op, "thingType=99");
      expect(type.status).toBe(404);
      expect(type.body).toMatchObject({ messageKey: "THING_TYPE_NOT_FOUND", property: "thingType" });
    }
  });

  it("listAll needs Files.READ somewhere", async () => {
    expect((await call("nofiles", "list", "listAll=true")).body.messageKey).toBe("NOT_AUTHORIZED");
    expect((await call("eastie", "list", "listAll=true")).status).toBe(200);
  });

  it("needs a token and an API key", async () => {
    expect((await t.call("GET", "/files?public=true")).status).toBe(401);
    const res = await fetch(`${t.url}/files?public=true`, { headers: { authorization: await t.token("alice") } });
    expect(res.status).toBe(403);
  });
});
