import { afterAll, beforeAll, expect, it } from "vitest";
import { startTestDms, type TestDms } from "../support/dms.js";
import { json } from "../support/http.js";

let t: TestDms;
beforeAll(async () => {
  t = await startTestDms();
});
afterAll(() => t.close());

it("describes the file and search operations in /openapi.json", async () => {
  const res = await fetch(`${t.url}/openapi.json`);
  expect(res.status).toBe(200);
  const doc = await json(res);
  expect(Object.keys(doc.paths)).toEqual(
    expect.arrayContaining(["/files", "/files/download-url", "/files/upload-url", "/search"]),
  );
  expect(Object.keys(doc.paths["/files"])).toEqual(expect.arrayContaining(["get", "delete"]));
});
