import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { migrations } from "../../src/migrations.js";
import {
  DAY_MS,
  OBSERVATIONS_FILE,
  ObservationColumnsBuilder,
  storedInput,
  openObservations,
  type ObservationDocument,
  type OpenedObservations,
  type StoredObservationInput,
} from "../../src/observations/index.js";
import { openDatabase, type Db } from "../../src/store/index.js";

const T0 = Date.parse("2026-03-10T00:00:00Z");
const doc = (timestamp: number, thingName = "t1", thingType = "10"): ObservationDocument => ({
  thingName,
  thingType,
  domain: "acme",
  timestamp,
  state: { temp: timestamp % 100 },
});
const fromStream = (offset: number, timestamp: number): StoredObservationInput => ({
  from: { stream: "kafka:obs:0", offset },
  document: doc(timestamp),
});

const opened: { dir: string; db: Db; observations: OpenedObservations }[] = [];
afterEach(async () => {
  for (const o of opened.splice(0)) {
    await o.observations.close();
    o.db.close();
    rmSync(o.dir, { recursive: true, force: true });
  }
});

/** A data directory with the service's database and the observation file, written by the writer thread or not. */
function open(writerThread: boolean, dir = mkdtempSync(join(tmpdir(), "dms-partitions-")), now = T0 + 30 * DAY_MS) {
  const db = openDatabase({ dataDir: dir, migrations });
  const observations = openObservations({ dataDir: dir, db, writerThread, clock: () => now });
  opened.push({ dir, db, observations });
  return { dir, db, ...observations };
}

const all = async (o: OpenedObservations, thingTypes = ["10"]) =>
  (await o.reader.candidates({ tsFrom: -Infinity, tsTo: Infinity, thingTypes }, 1_000_000))
    .map(([id, , json]) => ({ id, ...(JSON.parse(json) as ObservationDocument) }))
    .sort((a, b) => a.id - b.id);

const tables = (dir: string): string[] => {
  const file = new Database(join(dir, OBSERVATIONS_FILE), { readonly: true });
  try {
    return file
      .prepare<[], { name: string }>(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'observations_d%'",
      )
      .all()
      .map((r) => r.name)
      .sort();
  } finally {
    file.close();
  }
};

describe.each([
  ["on the writer thread", true],
  ["on this thread", false],
])("the observation store %s", (_, writerThread) => {
  it("keeps one table per UTC day, ids unique across days, and reads a window over the days it spans", async () => {
    const o = open(writerThread);
    const times = [T0 - 1, T0, T0 + DAY_MS - 1, T0 + DAY_MS, T0 + 5 * DAY_MS + 7];
    await o.store.insertBatch(times.map((t) => ({ document: doc(t) })));
    expect(tables(o.dir)).toHaveLength(4);
    const stored = await all(o);
    expect(stored.map((s) => s.timestamp)).toEqual(times);
    expect(new Set(stored.map((s) => s.id)).size).toBe(times.length);
    const window = await o.reader.candidates({ tsFrom: T0, tsTo: T0 + DAY_MS, thingTypes: ["10"] }, 100);
    expect(window.map(([, , json]) => (JSON.parse(json) as ObservationDocument).timestamp).sort()).toEqual([
      T0,
      T0 + DAY_MS - 1,
      T0 + DAY_MS,
    ]);
    // A limit stops the read across days too.
    expect(await o.reader.candidates({ tsFrom: -Infinity, tsTo: Infinity, thingTypes: ["10"] }, 2)).toHaveLength(2);
    expect(await o.store.count()).toBe(times.length);
  });

  it("stores a replayed stream position once, whichever batch brings it again", async () => {
    const o = open(writerThread);
    await o.store.insertBatch([fromStream(0, T0), fromStream(1, T0 + 1), fromStream(2, T0 + 2)]);
    // A replay after a crash: from an earlier offset, overlapping what was stored, with new ones after.
    await o.store.insertBatch([fromStream(1, T0 + 1), fromStream(2, T0 + 2), fromStream(3, T0 + 3)]);
    // Another stream's offsets are its own; rows without a stream (HTTP) are never deduplicated.
    await o.store.insertBatch([{ from: { stream: "kafka:obs:1", offset: 0 }, document: doc(T0 + 4) }]);
    await o.store.insertBatch([{ document: doc(T0 + 5) }, { document: doc(T0 + 5) }]);
    expect((await all(o)).map((s) => s.timestamp)).toEqual([T0, T0 + 1, T0 + 2, T0 + 3, T0 + 4, T0 + 5, T0 + 5]);
  });

  it("stores the engine's columns as the JSON of the whole document, byte for byte, and a replayed position once", async () => {
    const o = open(writerThread);
    // Names and values JSON escapes: quotes, backslashes, line feeds, U+2028, a lone surrogate, numbers of every form.
    const docs: ObservationDocument[] = [
      {
        thingName: 'a "quoted"\\ name',
        thingType: "10",
        domain: "acme\nline",
        timestamp: T0,
        state: { s: "x\ny\u2028z" },
      },
      {
        thingName: "é\ud800🙂",
        thingType: "10",
        domain: "acme",
        timestamp: T0 + 1,
        state: { n: 1e21, m: -0, f: 0.1, z: null },
      },
      {
        thingName: "t1",
        thingType: "10",
        domain: "acme",
        timestamp: T0 + 2,
        state: { nested: { deep: [1, "two", { three: true }] } },
        nested: [{ type: "wheel", id: "fl", state: { pressure: 2.1 } }, { state: {} }],
      },
    ];
    const batch = (offsets: number[]) => {
      const rows = new ObservationColumnsBuilder(1);
      for (const i of offsets) {
        const { thingName, thingType, domain, timestamp, state, nested } = docs[i]!;
        rows.addObservation(thingName, thingType, domain, timestamp, state, nested, rows.streamOf("kafka:obs", 3), i);
      }
      return rows.columns();
    };
    await o.store.insertColumns(batch([0, 1]));
    await o.store.insertColumns(batch([1, 2]));
    const texts = (await o.reader.candidates({ tsFrom: -Infinity, tsTo: Infinity, thingTypes: ["10"] }, 10))
      .sort(([a], [b]) => a - b)
      .map(([, , json]) => json);
    expect(texts).toEqual(docs.map((d) => JSON.stringify(d)));
    expect(storedInput(batch([2]), 0)).toEqual({ from: { stream: "kafka:obs:3", offset: 2 }, document: docs[2] });
  });

  it("exports page in (ts, id) order across days", async () => {
    const o = open(writerThread);
    const times = [T0 + 2 * DAY_MS + 5, T0 + 3, T0 + DAY_MS, T0 + 3, T0 + 2 * DAY_MS];
    await o.store.insertBatch(times.map((t) => ({ document: doc(t) })));
    const pages: number[][] = [];
    let after = { ts: -Infinity, id: 0 };
    for (;;) {
      const page = await o.reader.exportPage({ thingType: "10" }, T0, T0 + 10 * DAY_MS, after, 2);
      if (page.length === 0) break;
      pages.push(page.map(([, ts]) => ts));
      const [id, ts] = page[page.length - 1]!;
      after = { ts, id };
    }
    expect(pages).toEqual([[T0 + 3, T0 + 3], [T0 + DAY_MS, T0 + 2 * DAY_MS], [T0 + 2 * DAY_MS + 5]]);
  });

  it("retention drops whole days and deletes the cut day's older rows, exactly", async () => {
    const o = open(writerThread);
    const cutoff = T0 + 2 * DAY_MS + 1000;
    const times = [T0, T0 + 1, T0 + DAY_MS, cutoff - 2, cutoff - 1, cutoff, cutoff + 1, T0 + 4 * DAY_MS];
    await o.store.insertBatch(times.map((t) => ({ document: doc(t) })));
    expect(tables(o.dir)).toHaveLength(4);
    // Whole days count whole, whatever the limit; the cut day's rows come `limit` at a time.
    expect(await o.store.deleteOlderThan(cutoff, 1)).toBe(3);
    expect(await o.store.deleteOlderThan(cutoff, 1)).toBe(1);
    expect(await o.store.deleteOlderThan(cutoff, 10)).toBe(1);
    expect(await o.store.deleteOlderThan(cutoff, 10)).toBe(0);
    expect((await all(o)).map((s) => s.timestamp)).toEqual([cutoff, cutoff + 1, T0 + 4 * DAY_MS]);
    expect(tables(o.dir)).toHaveLength(2);
    // A late row of a dropped day makes its table again.
    await o.store.insertBatch([{ document: doc(T0 + 5) }]);
    expect((await all(o)).map((s) => s.timestamp)).toContain(T0 + 5);
  });

  it("gives each closed day its thing index once maintained, and reads by thing either way", async () => {
    const o = open(writerThread);
    await o.store.insertBatch([{ document: doc(T0, "a") }, { document: doc(T0 + 1, "b") }]);
    const byThing = () =>
      o.reader.candidates({ tsFrom: -Infinity, tsTo: Infinity, thingTypes: ["10"], thingNames: ["b"] }, 10);
    expect(await byThing()).toHaveLength(1);
    expect(tables(o.dir)).toHaveLength(1);
    const indexes = () => {
      const file = new Database(join(o.dir, OBSERVATIONS_FILE), { readonly: true });
      const names = file
        .prepare<[], { name: string }>("SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE '%thing_ts'")
        .all();
      file.close();
      return names.length;
    };
    expect(indexes()).toBe(0);
    await o.store.maintain();
    expect(indexes()).toBe(1);
    expect(await byThing()).toHaveLength(1);
  });

  it("leaves the day that is open by the store's clock without its thing index, whatever the machine's clock says", async () => {
    // The writer thread takes the store's clock too: a stream's rows of today are not late rows of a closed day.
    const o = open(writerThread, undefined, T0 + DAY_MS / 2);
    await o.store.insertBatch([{ document: doc(T0, "a") }, { document: doc(T0 - DAY_MS, "b") }]);
    await o.store.maintain();
    const file = new Database(join(o.dir, OBSERVATIONS_FILE), { readonly: true });
    const indexed = file
      .prepare<[], { name: string }>("SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE '%thing_ts'")
      .all()
      .map((r) => r.name);
    file.close();
    // The day before T0 has closed; T0's has not.
    expect(indexed).toHaveLength(1);
    expect(indexed[0]).not.toContain(String(Math.floor(T0 / DAY_MS)));
  });
});

describe("the observation store on the writer thread", () => {
  it("refuses a stream's later batch after a failed one, until the failed rows come again", async () => {
    const o = open(true);
    await o.store.insertBatch([fromStream(0, T0)]);
    // Another connection holds the write lock past the writer's busy timeout: the batch fails.
    const blocker = new Database(join(o.dir, OBSERVATIONS_FILE));
    blocker.exec("BEGIN EXCLUSIVE");
    await expect(o.store.insertBatch([fromStream(1, T0 + 1)])).rejects.toThrow(/locked|busy/i);
    blocker.exec("COMMIT");
    blocker.close();
    // Storing offset 2 now would move the mark past 1, and the replay of 1 would be skipped.
    await expect(o.store.insertBatch([fromStream(2, T0 + 2)])).rejects.toThrow(/from offset 1/);
    await o.store.insertBatch([fromStream(1, T0 + 1), fromStream(2, T0 + 2)]);
    expect((await all(o)).map((s) => s.timestamp)).toEqual([T0, T0 + 1, T0 + 2]);
  }, 20_000);

  it("moves the single table of earlier versions into the days, once", async () => {
    const dir = mkdtempSync(join(tmpdir(), "dms-partitions-"));
    const legacy = openDatabase({ dataDir: dir, migrations });
    legacy.exec(`CREATE TABLE observations (id INTEGER PRIMARY KEY, source_key TEXT UNIQUE, thing_name TEXT NOT NULL,
      thing_type TEXT NOT NULL, domain TEXT NOT NULL, ts INTEGER NOT NULL, doc TEXT NOT NULL)`);
    const insert = legacy.prepare(
      "INSERT INTO observations (thing_name, thing_type, domain, ts, doc) VALUES ('t1', '10', 'acme', ?, ?)",
    );
    for (const t of [T0, T0 + DAY_MS, T0 + 2 * DAY_MS]) insert.run(t, JSON.stringify(doc(t)));
    legacy.close();
    const o = open(true, dir);
    expect((await all(o)).map((s) => s.timestamp)).toEqual([T0, T0 + DAY_MS, T0 + 2 * DAY_MS]);
    expect(o.db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE name = 'observations'").get()).toEqual({ n: 0 });
  });
});
