import { afterAll, describe, expect, it } from "vitest";
import { ApiError } from "../../src/errors/index.js";
import { migrations } from "../../src/migrations.js";
import { openObservations, planFind, runFind } from "../../src/observations/index.js";
import { columnRuns } from "../../src/observations/find/vector/index.js";
import { openDatabase, type Db } from "../../src/store/index.js";
import { generate, START, THING_TYPES, type ObservationDoc } from "./differential/data.js";
import { CORPUS, REFUSALS } from "./differential/queries.js";

/**
 * FIND answered from closed days' columns without a document per row (find/vector)
 * against the document path over the same closed days, for every request of the
 * differential corpus: the same answer to the last digit (`took` aside), or the same
 * refusal. The documents are stored once in timestamp order and once shuffled (ids
 * then do not follow the timestamps, as with late rows), so that buckets merged in id
 * order and sums per shard are checked in both orders. The dashboards' shapes must
 * take the column path.
 */

const NOW = Date.now();
const DAY = 86_400_000;
const dbs: Db[] = [];
afterAll(() => {
  for (const db of dbs) db.close();
});

type Answer = { status: number; body: unknown };

function closedStore(docs: readonly ObservationDoc[]) {
  const db = openDatabase({ dataDir: ":memory:", migrations });
  dbs.push(db);
  const { store, reader } = openObservations({ dataDir: ":memory:", db, writerThread: false });
  // In memory the store writes on this thread, before insertBatch and maintain return.
  void store.insertBatch(docs.map((document) => ({ document })));
  void store.maintain();
  /** FIND's answer, from the columns' rows (find/vector) where the plan allows, or from documents only. */
  return async (request: unknown, columnPath: boolean): Promise<Answer> => {
    try {
      const plan = planFind(request, NOW);
      if (!columnPath) plan.fromColumns = false;
      const body = (await runFind(reader, plan, { thingTypes: THING_TYPES })) as Record<string, unknown>;
      return { status: 200, body: { ...body, took: 0 } };
    } catch (err) {
      if (err instanceof ApiError) return { status: err.status, body: { error: err.key, message: err.message } };
      throw err;
    }
  };
}

/** A fixed shuffle: the same every run. */
function shuffled<T>(xs: readonly T[]): T[] {
  const out = [...xs];
  let seed = 7;
  for (let i = out.length - 1; i > 0; i--) {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    const j = seed % (i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

const since = { range: { timestamp: { gte: new Date(START).toISOString() } } };
/** bench/find's dashboard queries, over this data set. */
const DASHBOARDS: Record<string, unknown> = {
  "one day, 1h histogram with avg and max, terms of things": {
    size: 0,
    query: {
      bool: {
        filter: [
          { range: { timestamp: { gte: new Date(START).toISOString(), lt: new Date(START + DAY).toISOString() } } },
          { term: { thingType: "10" } },
        ],
      },
    },
    aggs: {
      h: {
        date_histogram: { field: "timestamp", interval: "1h" },
        aggs: { avg: { avg: { field: "state.temp" } }, max: { max: { field: "state.temp" } } },
      },
      things: { terms: { field: "thingName", size: 10 } },
    },
  },
  "terms of things ordered by an average": {
    size: 0,
    query: { bool: { filter: [since] } },
    aggs: {
      t: {
        terms: { field: "thingName", size: 10, order: { a: "desc" } },
        aggs: { a: { avg: { field: "state.temp" } } },
      },
    },
  },
  "daily histogram in Europe/Oslo with stats": {
    size: 0,
    query: { bool: { filter: [since, { term: { thingType: "20" } }] } },
    aggs: {
      d: {
        date_histogram: { field: "timestamp", interval: "day", time_zone: "Europe/Oslo" },
        aggs: { s: { stats: { field: "state.temp" } } },
      },
    },
  },
  "last 20 observations of a thing": {
    size: 20,
    query: { bool: { filter: [since, { term: { thingName: "thing-07" } }] } },
    sort: [{ timestamp: "desc" }],
  },
  "hot readings: count and geo bounds": {
    size: 0,
    query: { bool: { filter: [since, { range: { "state.temp": { gte: 30 } } }] } },
    aggs: { g: { geo_bounds: { field: "state.pos" } } },
  },
};

describe("FIND from columns without a document per row answers what the documents answer", () => {
  // With a geo point as a string (bench/find's form), which a keyword column holds.
  const docs = generate(6_000).map((d, i) => ({ ...d, state: { ...d.state, pos: `59.9${i % 10},10.7${i % 7}` } }));
  const stores = { "in timestamp order": closedStore(docs), shuffled: closedStore(shuffled(docs)) };
  const requests = [...CORPUS, ...REFUSALS].map((c) => [c.name, c.request] as const);

  describe.each(Object.entries(stores))("stored %s", (_order, find) => {
    // Hundreds of requests twice each: minutes on a loaded machine, now that each one awaits its reads.
    it("every request of the differential corpus", async () => {
      const before = columnRuns.answered;
      for (const [name, request] of requests) {
        const fromColumns = await find(request, true);
        expect(fromColumns, name).toEqual(await find(request, false));
      }
      const taken = columnRuns.answered - before;
      console.log(`column path answered ${taken} of ${requests.length} requests`);
      expect(taken).toBeGreaterThanOrEqual(60);
    }, 300_000);

    it.each(Object.entries(DASHBOARDS))("the dashboard's %s takes the column path", async (_name, request) => {
      const before = columnRuns.answered;
      const fromColumns = await find(request, true);
      expect(columnRuns.answered - before).toBe(1);
      expect(fromColumns.status).toBe(200);
      expect(fromColumns).toEqual(await find(request, false));
      expect((fromColumns.body as { hits: { total: number } }).hits.total).toBeGreaterThan(0);
    });
  });
});
