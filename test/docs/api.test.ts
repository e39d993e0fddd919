import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { ERROR_STATUS } from "../../src/errors/index.js";
import { API_DOC, apiDoc, MARKER, openApiDocument } from "../../scripts/api-doc.js";

const text = readFileSync(API_DOC, "utf8");

describe("docs/api.md", () => {
  it("states every operation and field as the service's /openapi.json does (npm run docs:api)", async () => {
    expect(text).toContain(MARKER);
    expect(text).toEqual(await apiDoc(text, await openApiDocument()));
  });

  it("lists every error key of the service with its HTTP status, and no other", () => {
    const table = new Map(
      [...text.matchAll(/^\| `([A-Z_]+)` +\| (\d{3}) +\|/gm)].map(([, key, status]) => [key!, Number(status)]),
    );
    expect(Object.fromEntries(table)).toEqual(ERROR_STATUS);
  });
});
