import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSearch } from "../../src/search/index.js";
import { openParts, type Parts } from "../support/parts.js";

/** The search index made from its parts (no service, no HTTP). */

let parts: Parts;

beforeAll(async () => {
  parts = await openParts();
});
afterAll(() => parts.close());

describe("search: the index made from its parts follows the bus", () => {
  it("a domain created after the index was built is found", async () => {
    const search = createSearch(parts);
    try {
      expect(search.search(parts.as("admin"), { term: "Atlantis" }).hits.total).toBe(0);
      await parts.identity.createDomain("atl", "acme", "Atlantis");
      expect(search.search(parts.as("admin"), { term: "Atlantis" }).hits.hits.map((h) => h._id)).toEqual(["atl"]);
      await parts.identity.deleteDomain("atl");
      expect(search.search(parts.as("admin"), { term: "Atlantis" }).hits.total).toBe(0);
    } finally {
      search.close();
    }
  });
});
