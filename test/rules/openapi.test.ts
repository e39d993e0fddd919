import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDms, type TestDms } from "../support/dms.js";
import { json } from "../support/http.js";

let t: TestDms;
beforeAll(async () => {
  t = await startTestDms();
});
afterAll(() => t.close());

describe("OpenAPI", () => {
  it("describes the rules, dead-letter and events operations", async () => {
    const res = await fetch(`${t.url}/openapi.json`);
    expect(res.status).toBe(200);
    const doc = await json(res);
    for (const path of [
      "/rules",
      "/rules/{id}",
      "/rules/test",
      "/actions/dead-letters",
      "/actions/dead-letters/{id}/retry",
      "/events",
      "/events/{id}/ack",
    ]) {
      expect(Object.keys(doc.paths)).toContain(path);
    }
    expect(Object.keys(doc.paths["/rules"])).toEqual(expect.arrayContaining(["get", "post", "patch"]));
  });
});
