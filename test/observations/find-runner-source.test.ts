import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { migrations } from "../../src/migrations.js";
import {
  createFindRunner,
  observationPgMigrations,
  openObservations,
  PgObservationReader,
  PgObservationStore,
  type ObservationDocument,
  type ObservationReader,
  type ObservationStore,
  type ReaderSource,
} from "../../src/observations/index.js";
import { openDatabase } from "../../src/store/index.js";
import { createPgDatabase } from "../support/postgres.js";

/** A store whose FIND threads open readers of their own from its `ReaderSource`. */
interface Shared {
  store: ObservationStore;
  reader: ObservationReader;
  source: ReaderSource;
  close(): Promise<void>;
}

const BACKENDS: { name: string; open(): Promise<Shared> }[] = [
  {
    name: "SQLite",
    async open() {
      const dir = mkdtempSync(join(tmpdir(), "dms-find-source-"));
      const db = openDatabase({ dataDir: dir, migrations });
      const o = openObservations({ dataDir: dir, db, writerThread: false });
      return {
        store: o.store,
        reader: o.reader,
        source: o.source!,
        close: async () => {
          await o.close();
          db.close();
          rmSync(dir, { recursive: true, force: true });
        },
      };
    },
  },
  {
    name: "PostgreSQL",
    async open() {
      const database = await createPgDatabase(observationPgMigrations);
      return {
        store: await PgObservationStore.open(database.pool),
        reader: new PgObservationReader(database.pool),
        source: { postgresUrl: database.url },
        close: () => database.drop(),
      };
    },
  },
];

const T0 = Date.parse("2026-01-01T00:00:00Z");
const doc = (i: number): ObservationDocument => ({
  thingName: `t${i % 7}`,
  thingType: "10",
  domain: "acme",
  timestamp: T0 + i * 60_000,
  state: { temp: i % 13 },
});

describe.each(BACKENDS)("FIND threads on $name", (backend) => {
  const opened: Shared[] = [];
  afterAll(async () => {
    await Promise.all(opened.map((o) => o.close()));
  });

  it("open their own reader from the source and answer what the in-process run answers", async () => {
    const o = await backend.open();
    opened.push(o);
    await o.store.insertBatch(Array.from({ length: 3000 }, (_, i) => ({ document: doc(i) })));
    const request = {
      size: 3,
      sort: [{ timestamp: "desc" }],
      query: { bool: { filter: [{ range: { timestamp: { gte: T0 } } }, { range: { "state.temp": { gte: 6 } } }] } },
      aggs: { things: { terms: { field: "thingName" }, aggs: { top: { max: { field: "state.temp" } } } } },
    };
    const threaded = createFindRunner({ source: o.source, reader: o.reader, threads: 1, budgetMs: 60_000 });
    const inProcess = createFindRunner({ source: undefined, reader: o.reader, threads: 0, budgetMs: 60_000 });
    try {
      const [a, b] = await Promise.all([
        threaded.find(request, T0, { thingTypes: ["10"], fieldTypes: {} }, "acme"),
        inProcess.find(request, T0, { thingTypes: ["10"], fieldTypes: {} }, "acme"),
      ]);
      const answer = JSON.parse(a) as { took: number; hits: { total: number } };
      expect(answer.hits.total).toBe(3000 - Array.from({ length: 3000 }, (_, i) => i % 13).filter((t) => t < 6).length);
      expect({ ...answer, took: 0 }).toEqual({ ...(JSON.parse(b) as object), took: 0 });
    } finally {
      await threaded.close();
      await inProcess.close();
    }
  }, 120_000);
});
