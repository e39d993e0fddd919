import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OPENSEARCH_START_TIMEOUT_MS, startOpenSearch } from "../../support/opensearch.js";
import { generate } from "./data.js";
import {
  differences,
  dmsEngine,
  fromOpenSearch,
  openSearchEngine,
  toOpenSearch,
  type EngineAnswer,
  hitsById,
} from "./engines.js";
import { CORPUS, GEO_FIELDS, REFUSALS } from "./queries.js";
import { OBSERVATION_BACKENDS } from "../backends.js";

/**
 * FIND against a real OpenSearch 2.19 (scripts/opensearch.sh): the same generated
 * observations in both, every request of the corpus to both, each answer compared
 * field by field. Translations between Elasticsearch 5.6 and OpenSearch 2.x are in
 * engines.ts and named in each test's title; the deliberate differences of dms are
 * in docs/observations.md.
 */

/**
 * Documents in the data set. The default runs in about two minutes on a loaded 2-core box
 * (the suite's CI budget); FIND_DIFFERENTIAL_DOCS=20000 checks more terms per shard, longer
 * date ranges per bucket and larger sums (see docs/observations.md).
 */
const DOCS = Number(process.env.FIND_DIFFERENTIAL_DOCS ?? 10_000);

describe.each(OBSERVATION_BACKENDS)("FIND on $name answers what OpenSearch answers", (backend) => {
  const docs = generate(DOCS);
  let dms: Awaited<ReturnType<typeof dmsEngine>>;
  /** The same documents in days closed since (the data set's days are past): read from their columns. */
  let dmsClosed: Awaited<ReturnType<typeof dmsEngine>>;
  /** The same answer from the rows and from the column cache, to the last digit (`took` aside). */
  const sameFromColumns = async (request: unknown, fromRows: EngineAnswer): Promise<void> => {
    const fromColumns = await dmsClosed.search(request);
    expect(fromColumns.status).toBe(fromRows.status);
    expect({ ...fromColumns.body, took: 0 }).toEqual({ ...fromRows.body, took: 0 });
  };
  let os: Awaited<ReturnType<typeof openSearchEngine>>;

  beforeAll(async () => {
    dms = await dmsEngine(backend, docs, Date.now());
    dmsClosed = await dmsEngine(backend, docs, Date.now(), { closed: true });
    const url = await startOpenSearch();
    os = await openSearchEngine(url, docs, GEO_FIELDS);
  }, OPENSEARCH_START_TIMEOUT_MS);
  afterAll(async () => {
    await dms?.close();
    await dmsClosed?.close();
    await os?.close();
  });

  describe.each(CORPUS.map((c) => [c.name, c] as const))("%s", (_name, c) => {
    const applied = new Set<string>();
    const translated = toOpenSearch(c.openSearch?.request ?? c.request, applied);
    if (c.openSearch) applied.add(`OpenSearch asked otherwise: ${c.openSearch.why}`);
    const title = applied.size ? `translated: ${[...applied].join("; ")}` : "as is";
    it(title, async () => {
      const mine = await dms.search(c.request);
      const theirs = await os.search(translated);
      expect(theirs.status, JSON.stringify(theirs.body).slice(0, 600)).toBe(200);
      expect(mine.status, JSON.stringify(mine.body)).toBe(200);
      const [ours, openSearch] = [mine.body, fromOpenSearch(theirs.body, translated)].map((body) =>
        c.tiesInAnyOrder ? hitsById(body) : body,
      );
      expect(differences(ours, openSearch, { ignore: c.ignore })).toEqual([]);
      await sameFromColumns(c.request, mine);
    });
  });

  describe.each(REFUSALS.map((c) => [c.name, c] as const))("refused by both: %s", (_name, c) => {
    it(`dms names [${c.names}]`, async () => {
      const mine = await dms.search(c.request);
      const theirs = await os.search(toOpenSearch(c.request, new Set()));
      expect(theirs.status, JSON.stringify(theirs.body).slice(0, 300)).toBeGreaterThanOrEqual(400);
      if (c.openSearchStatus !== undefined) expect(theirs.status).toBe(c.openSearchStatus);
      else expect(theirs.status).toBeLessThan(500);
      expect(mine.status).toBe(400);
      expect(mine.body.error).toBe("INVALID_ARGUMENTS");
      expect(String(mine.body.message)).toContain(c.names);
      await sameFromColumns(c.request, mine);
    });
  });

  it("the corpus holds at least 200 requests", () => {
    expect(CORPUS.length + REFUSALS.length).toBeGreaterThanOrEqual(200);
  });
});
