import fc from "fast-check";
import { afterEach, describe, expect, it, vi } from "vitest";
import { migrations } from "../../src/migrations.js";
import {
  DAY_MS,
  openObservations,
  planFind,
  runFind,
  SqliteObservationReader,
  type ObservationDocument,
  type ObservationReader,
} from "../../src/observations/index.js";
import { DayColumns } from "../../src/observations/columns.js";
import { MAINTAIN_EVERY_MS, ObservationPartitions, storeDayColumns } from "../../src/observations/partitions.js";
import { openDatabase, type Db } from "../../src/store/index.js";
import type { Payload } from "../support/http.js";

/**
 * FIND over closed days read from their column cache, and over more candidates
 * than it may hold: the same answers as from the rows, every time the days change.
 */

const T0 = Date.parse("2026-03-10T00:00:00Z");
const NOW = T0 + 30 * DAY_MS;
const TYPES = ["10", "20"];

const dbs: Db[] = [];
afterEach(() => {
  for (const db of dbs.splice(0)) db.close();
});

function store() {
  const db = openDatabase({ dataDir: ":memory:", migrations });
  dbs.push(db);
  return { db, ...openObservations({ dataDir: ":memory:", db, writerThread: false, clock: () => NOW }) };
}

const reading = (i: number, timestamp: number, state: Record<string, unknown> = {}): ObservationDocument => ({
  thingName: `t${i % 7}`,
  thingType: TYPES[i % 2]!,
  domain: "acme",
  timestamp,
  // `flag` booleans and `mixed` numbers and strings: columns of parsed values, stored as JSON.
  state: {
    temp: (i % 50) - 10.5,
    label: `l${i % 3}`,
    flag: i % 4 === 0,
    mixed: i % 3 === 0 ? i : `m${i % 5}`,
    ...state,
  },
});

/** Three days of readings, every 10 minutes. */
const threeDays = (): ObservationDocument[] => Array.from({ length: 3 * 144 }, (_, i) => reading(i, T0 + i * 600_000));

const find = async (reader: ObservationReader, request: unknown, maxMatches?: number): Promise<Payload> => {
  const answer = await runFind(reader, planFind(request, NOW), { thingTypes: TYPES }, maxMatches);
  return { ...answer, took: 0 };
};

const since = (from: number, ...filter: unknown[]) => ({
  bool: { filter: [{ range: { timestamp: { gte: from } } }, ...filter] },
});

/** Dashboard requests reading a few scalar fields: what the columns answer. */
const DASHBOARD = [
  {
    size: 0,
    query: since(T0, { term: { thingType: "20" } }),
    aggs: {
      h: {
        date_histogram: { field: "timestamp", interval: "6h" },
        aggs: { a: { avg: { field: "state.temp" } }, m: { max: { field: "state.temp" } } },
      },
      t: { terms: { field: "thingName", size: 3 } },
    },
  },
  {
    size: 0,
    query: since(T0 + DAY_MS / 2, { range: { "state.temp": { gte: 20 } } }),
    aggs: { l: { terms: { field: "state.label" }, aggs: { s: { stats: { field: "state.temp" } } } } },
  },
  {
    size: 0,
    query: since(T0, { term: { "state.flag": true } }),
    aggs: { m: { terms: { field: "state.mixed", size: 20 } }, f: { terms: { field: "state.flag" } } },
  },
  {
    size: 5,
    query: since(T0, { term: { thingName: "t3" } }),
    sort: [{ "state.temp": "desc" }, { timestamp: "asc" }],
  },
  {
    size: 2,
    query: since(T0, { exists: { field: "state.extra" } }),
    aggs: { c: { value_count: { field: "state.extra" } } },
  },
];

/** A store read from its rows and one read from its columns, both with `threeDays`, the second's days closed and taken apart. */
async function pair() {
  const fromRows = store();
  const fromColumns = store();
  const both = async (docs: ObservationDocument[]) => {
    for (const s of [fromRows, fromColumns]) await s.store.insertBatch(docs.map((document) => ({ document })));
  };
  const docs = threeDays();
  await both(docs);
  await fromColumns.store.maintain();
  const same = async (reader: ObservationReader = fromColumns.reader) => {
    for (const request of DASHBOARD) expect(await find(reader, request)).toEqual(await find(fromRows.reader, request));
  };
  return { fromRows, fromColumns, both, same, docs };
}

describe("FIND from the column cache of closed days", () => {
  it("answers what the rows answer, and again after late rows and retention change a closed day", async () => {
    // Only the second store's days close: its reader then reads them from their columns.
    const { fromRows, fromColumns, both, same, docs } = await pair();
    await same();

    // A late device: rows into a day that closed and whose columns are built (and a new field, `extra`).
    const late = [reading(1, T0 + 3_600_000, { extra: 7 }), reading(3, T0 + 2 * DAY_MS - 1, { temp: 99 })];
    await both(late);
    await same();
    expect((await find(fromColumns.reader, DASHBOARD[4]!)).hits.total).toBe(1);
    // The writer stores the day's columns again; a reader that never saw the day reads them.
    await fromColumns.store.maintain();
    const stored = fromColumns.db.prepare("SELECT count(*) AS n FROM observation_columns").get() as { n: number };
    expect(stored.n).toBe(3);
    const fresh = new SqliteObservationReader(fromColumns.db);
    await same(fresh);

    // Retention cuts the first day: the rows it deleted are gone from the columns too.
    const cutoff = T0 + DAY_MS / 3;
    for (const s of [fromRows, fromColumns]) await s.store.deleteOlderThan(cutoff, 1_000);
    await same();
    expect((await find(fromColumns.reader, { size: 0, query: since(0) })).hits.total).toBe(
      [...docs, ...late].filter((d) => d.timestamp >= cutoff).length,
    );
  });

  it("reads rows stored late into a closed day beside its columns, without taking the day apart again", async () => {
    const { fromRows, fromColumns, both, same } = await pair();
    await same();
    const build = vi.spyOn(DayColumns, "build");
    try {
      // A device with a lagging clock: a row into the first (closed) day now and then, the dashboard between them.
      const trickle = async (k: number) => {
        await both([reading(k, T0 + (k % 24) * 3_600_000 + 1, { temp: 100 + k, extra: k })]);
        await same();
      };
      for (let k = 0; k < 9; k++) await trickle(k);
      expect(build).not.toHaveBeenCalled();
      // The builder leaves the day to its readers while its late rows are few (9 of 144: within a sixteenth)...
      expect(storeDayColumns(fromColumns.db, Infinity)).toBe(0);
      // ...and builds it again once they are not; readers then take those columns, kept or fresh.
      await trickle(9);
      expect(storeDayColumns(fromColumns.db, Infinity)).toBe(1);
      expect(build).toHaveBeenCalledTimes(1);
      await same();
      await same(new SqliteObservationReader(fromColumns.db));
      expect(build).toHaveBeenCalledTimes(1);
    } finally {
      build.mockRestore();
    }
    // Retention drops the first day whole, and a late row makes it again: nothing of the old columns is read.
    for (const s of [fromRows, fromColumns]) await s.store.deleteOlderThan(T0 + DAY_MS, 1_000_000);
    await both([reading(5, T0 + 600_000, { temp: -50 })]);
    await same();
    expect(
      (await find(fromColumns.reader, { size: 0, query: since(0, { range: { timestamp: { lt: T0 + DAY_MS } } }) })).hits
        .total,
    ).toBe(1);
  });

  it("answers what the rows answer through any mix of late rows, builder passes, retention and new readers", async () => {
    // One step of the store's life: rows into a day (closed ones are late), the writer thread's
    // pass (closes days, builds no columns), a pass of the builder (periodic or forced),
    // retention's cut, or a reader that never saw the days.
    const step = fc.oneof(
      fc.record({
        op: fc.constant("rows" as const),
        day: fc.integer({ min: 0, max: 2 }),
        n: fc.integer({ min: 1, max: 30 }),
      }),
      fc.record({ op: fc.constant("close" as const) }),
      fc.record({ op: fc.constant("build" as const), force: fc.boolean() }),
      fc.record({ op: fc.constant("retention" as const), cut: fc.integer({ min: 0, max: 3 * 144 }) }),
      fc.record({ op: fc.constant("reader" as const) }),
    );
    let seq = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 10 }), async (steps) => {
        const { fromRows, fromColumns, both, same } = await pair();
        let reader: ObservationReader = fromColumns.reader;
        // As the writer thread's partitions: a minute between passes, columns left to the builder.
        let minutes = NOW;
        const writer = new ObservationPartitions(fromColumns.db, () => (minutes += MAINTAIN_EVERY_MS), false);
        for (const s of steps) {
          if (s.op === "rows")
            await both(
              Array.from({ length: s.n }, () => {
                const i = seq++;
                return reading(i, T0 + s.day * DAY_MS + ((i * 7_919) % DAY_MS), { temp: i % 97, extra: i });
              }),
            );
          else if (s.op === "close") writer.maintain();
          else if (s.op === "build") {
            if (s.force) await fromColumns.store.maintain();
            else storeDayColumns(fromColumns.db, Infinity);
          } else if (s.op === "retention") {
            for (const x of [fromRows, fromColumns]) await x.store.deleteOlderThan(T0 + s.cut * 600_000, 1_000_000);
          } else reader = new SqliteObservationReader(fromColumns.db);
          await same(reader);
        }
        for (const x of [fromRows, fromColumns]) x.db.close();
        dbs.splice(dbs.indexOf(fromRows.db), 1);
        dbs.splice(dbs.indexOf(fromColumns.db), 1);
      }),
      { numRuns: 60 },
    );
  }, 120_000);

  it("reads from the rows what the columns cannot answer exactly: objects, arrays, whole documents", async () => {
    const fromRows = store();
    const fromColumns = store();
    const docs = threeDays().map((d, i) =>
      i % 10 === 0 ? { ...d, state: { ...d.state, parts: [{ v: i }, { v: i + 1 }], nested: { deep: { x: i } } } } : d,
    );
    for (const s of [fromRows, fromColumns]) await s.store.insertBatch(docs.map((document) => ({ document })));
    await fromColumns.store.maintain();
    const requests = [
      { size: 0, query: since(T0, { exists: { field: "state" } }) },
      { size: 0, query: since(T0), aggs: { v: { sum: { field: "state.parts.v" } } } },
      { size: 0, query: since(T0), aggs: { x: { max: { field: "state.nested.deep.x" } } } },
      { size: 0, query: since(T0, { exists: { field: "state.nested" } }) },
      { size: 3, query: since(T0), aggs: { top: { top_hits: { size: 2, sort: [{ timestamp: "desc" }] } } } },
      { size: 4, query: since(T0, { range: { "state.temp": { gte: 30 } } }), _source: ["state.parts"] },
    ];
    for (const request of requests)
      expect(await find(fromColumns.reader, request)).toEqual(await find(fromRows.reader, request));
    // The hits of a page carry their whole documents, though the matches held only what the query reads.
    const hit = (
      await find(fromColumns.reader, {
        size: 1,
        query: since(T0, { term: { thingName: "t0" } }),
        sort: ["timestamp"],
      })
    ).hits.hits[0]!;
    expect(hit._source).toEqual(docs[0]);
  });
});

describe("FIND streams its candidates", () => {
  it("answers exactly over more candidates than the 1,000,000 it once held, and bounds its matches instead", async () => {
    const s = store();
    const rows = 1_000_050;
    const step = Math.floor((2 * DAY_MS) / rows);
    for (let from = 0; from < rows; from += 100_000) {
      const batch = [];
      for (let i = from; i < Math.min(rows, from + 100_000); i++)
        batch.push({
          document: { thingName: "t", thingType: "10", domain: "d", timestamp: T0 + i * step, state: { n: i % 1000 } },
        });
      await s.store.insertBatch(batch);
    }
    const request = {
      size: 0,
      query: since(T0, { range: { "state.n": { gte: 990 } } }),
      aggs: { n: { sum: { field: "state.n" } } },
    };
    // Matches: n from 990 to 999 in every thousand rows, and the rows 1,000,000..1,000,049 have n 0..49.
    const expected = { total: 10_000, sum: 1000 * (990 + 999) * 5 };
    const check = async () => {
      const answer = await find(s.reader, request);
      expect({ total: answer.hits.total, sum: answer.aggregations.n.value }).toEqual(expected);
    };
    await check();
    await s.store.maintain();
    await check();
    await expect(find(s.reader, request, 9_999)).rejects.toThrow(/more than 9,999 observations match/);
  }, 300_000);
});
