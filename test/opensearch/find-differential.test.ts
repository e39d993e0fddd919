import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApiError } from "../../src/errors/index.js";
import {
  createFindRunner,
  declaredFieldTypes,
  findJson,
  planFind,
  runFind,
  type FindRunner,
} from "../../src/observations/index.js";
import { OpenSearchClient, openSearchFind } from "../../src/opensearch/index.js";
import type { ResourceDefinition } from "../../src/things/index.js";
import { OPENSEARCH_START_TIMEOUT_MS, startOpenSearch } from "../support/opensearch.js";
import { SQLITE, type OpenedBackend } from "../observations/backends.js";
import { THING_TYPES, generate } from "../observations/differential/data.js";
import { differences, hitsById } from "../observations/differential/engines.js";
import { CORPUS, REFUSALS } from "../observations/differential/queries.js";
import { EXTRA_CASES } from "./translations.js";
import { dropPrefix, indexDocuments, layoutOf, uniquePrefix } from "./support.js";

/**
 * FIND answered by OpenSearch (src/opensearch) against FIND answered by the embedded evaluator,
 * on the same observations: the data set and every request of the differential corpus
 * (test/observations/differential), and requests that use what ES 5.6 had and OpenSearch 2.x
 * dropped. The observations are indexed the store role's way (its templates from the thing
 * types' resources, its documents, its `_bulk` queue) under the ids the embedded store gives them.
 * The layout holds the data's window in one index per thing type (a yearly period): one shard per
 * thing type, as the embedded evaluator answers; docs/opensearch.md says what a window over
 * several periods changes (the terms cut per shard).
 *
 * The paths the existing differential test ignores stay ignored here, for the same reasons (scores
 * in query context, percentile interpolation, `[lon, lat]` arrays counted as numbers by dms):
 * these are differences between the embedded evaluator and any search engine.
 */

const DOCS = Number(process.env.FIND_DIFFERENTIAL_DOCS ?? 10_000);
/** The resources the thing types declare: the mapping comes from them, and sort sentinels of the embedded evaluator too. */
const RESOURCES: ResourceDefinition[] = [
  { name: "loc", dataType: "geo_point", resourceType: "thing" },
  { name: "level", dataType: "string", resourceType: "thing" },
  { name: "on", dataType: "boolean", resourceType: "thing" },
  { name: "count", dataType: "long", resourceType: "thing" },
  { name: "temp", dataType: "double", resourceType: "thing" },
];
const SCOPE = {
  thingTypes: THING_TYPES,
  fieldTypes: declaredFieldTypes(THING_TYPES.map(() => ({ resources: RESOURCES }))),
};
const BUDGET_MS = 60_000;

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

/** An answer as a client reads it, `took` aside (how long each took is no answer to compare). */
async function answerOf(run: () => Promise<string>): Promise<Answer> {
  try {
    return { status: 200, body: { ...(JSON.parse(await run()) as Record<string, unknown>), took: 0 } };
  } catch (err) {
    if (err instanceof ApiError) return { status: err.status, body: { ...err.body() } };
    throw err;
  }
}

describe("FIND on OpenSearch answers what the embedded evaluator answers", () => {
  const docs = generate(DOCS);
  const prefix = uniquePrefix("find");
  const now = Date.now();
  let url: string;
  let embedded: OpenedBackend;
  let things: FindRunner;
  let os: FindRunner;

  const mine = (request: unknown): Promise<Answer> =>
    answerOf(async () => findJson(await runFind(embedded.reader, planFind(request, now, SCOPE), SCOPE)));
  const theirs = (request: unknown): Promise<Answer> => answerOf(() => os.find(request, now, SCOPE, "acme"));

  beforeAll(async () => {
    embedded = await SQLITE.open();
    await embedded.store.insertBatch(docs.map((document) => ({ document })));
    url = await startOpenSearch();
    const layout = layoutOf(prefix, "year");
    await indexDocuments(
      url,
      layout,
      () => RESOURCES,
      docs.map((document, i) => ({ id: String(i + 1), document })),
    );
    things = createFindRunner({ source: undefined, reader: embedded.reader, threads: 0, budgetMs: BUDGET_MS });
    os = openSearchFind({ client: new OpenSearchClient(url), layout, budgetMs: BUDGET_MS, planThreads: 0, things });
  }, OPENSEARCH_START_TIMEOUT_MS);
  afterAll(async () => {
    await os?.close();
    await embedded?.close();
    if (url) await dropPrefix(url, prefix);
  });

  it("holds every observation, each in its thing type's index", async () => {
    const answer = await theirs({
      size: 0,
      query: { range: { timestamp: { gte: 0 } } },
      aggs: { t: { terms: { field: "thingType" } } },
    });
    expect(answer.status).toBe(200);
    expect((answer.body.hits as { total: number }).total).toBe(DOCS);
    const page = await theirs({ size: 3, sort: [{ timestamp: "asc" }], query: { range: { timestamp: { gte: 0 } } } });
    const hits = (page.body.hits as { hits: { _index: string; _type: string; _id: string }[] }).hits;
    expect(hits.map((h) => h._id)).toEqual(["1", "2", "3"]);
    expect(hits[0]!._index).toBe(`observations-${docs[0]!.thingType}`);
    expect(hits[0]!._type).toBe("observation");
  });

  describe.each([...CORPUS, ...EXTRA_CASES].map((c) => [c.name, c] as const))("%s", (_name, c) => {
    it("the same answer", async () => {
      const a = await mine(c.request);
      const b = await theirs(c.request);
      expect(a.status, JSON.stringify(a.body).slice(0, 600)).toBe(200);
      expect(b.status, JSON.stringify(b.body).slice(0, 600)).toBe(200);
      const [ours, openSearch] = [a.body, b.body].map((body) =>
        "tiesInAnyOrder" in c && c.tiesInAnyOrder ? hitsById(body) : body,
      );
      expect(differences(ours, openSearch, { ignore: c.ignore })).toEqual([]);
    });
  });

  describe.each(REFUSALS.map((c) => [c.name, c] as const))("refused: %s", (_name, c) => {
    it("with the same error", async () => {
      const a = await mine(c.request);
      const b = await theirs(c.request);
      expect(a.status).toBe(400);
      expect(b).toEqual(a);
    });
  });

  it("a caller whose scope holds no thing type gets the empty answer the embedded evaluator gives", async () => {
    const request = {
      size: 0,
      query: { range: { timestamp: { gte: "2026-10-22" } } },
      aggs: {
        h: {
          date_histogram: {
            field: "timestamp",
            interval: "day",
            min_doc_count: 0,
            extended_bounds: { min: "2026-10-22", max: "2026-10-24" },
          },
        },
      },
    };
    const none = { thingTypes: [], fieldTypes: {} };
    const a = await answerOf(async () => findJson(await runFind(embedded.reader, planFind(request, now), none)));
    const b = await answerOf(() => os.find(request, now, none, "acme"));
    expect(differences(a.body, b.body)).toEqual([]);
    expect((b.body.hits as { total: number }).total).toBe(0);
  });

  it("a scope of some thing types searches theirs only", async () => {
    const scope = { thingTypes: ["20"], fieldTypes: SCOPE.fieldTypes };
    const request = {
      size: 0,
      query: { range: { timestamp: { gte: 0 } } },
      aggs: { t: { terms: { field: "thingType" } } },
    };
    const a = await answerOf(async () => findJson(await runFind(embedded.reader, planFind(request, now), scope)));
    const b = await answerOf(() => os.find(request, now, scope, "acme"));
    expect(differences(a.body, b.body)).toEqual([]);
    expect((b.body.aggregations as { t: { buckets: { key: string }[] } }).t.buckets.map((x) => x.key)).toEqual(["20"]);
  });
});
