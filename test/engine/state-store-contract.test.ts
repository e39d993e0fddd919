import { afterAll, describe, expect, it } from "vitest";
import {
  PgStateStore,
  SqliteStateStore,
  stateMigrations,
  statePgMigrations,
  type StateStore,
  type ThingState,
} from "../../src/engine/index.js";
import { openDatabase, type Db } from "../../src/store/index.js";
import { createPgDatabase, type PgDatabase } from "../support/postgres.js";

/**
 * One contract, every durable implementation of the engine's state seam: a restart resumes
 * half-reached counts and stream positions, whichever database holds them.
 */
interface Backend {
  name: string;
  /** A fresh database of its own: `open` answers a store over it, loaded as a starting engine loads it. */
  database(): Promise<{ open(): Promise<StateStore> }>;
  close(): Promise<void>;
}

function sqliteBackend(): Backend {
  const dbs: Db[] = [];
  return {
    name: "SQLite",
    async database() {
      const db = openDatabase({ dataDir: ":memory:", migrations: stateMigrations });
      dbs.push(db);
      return { open: async () => new SqliteStateStore(db) };
    },
    async close() {
      for (const db of dbs) db.close();
    },
  };
}

function pgBackend(): Backend {
  const databases: PgDatabase[] = [];
  return {
    name: "PostgreSQL",
    async database() {
      const database = await createPgDatabase(statePgMigrations);
      databases.push(database);
      return { open: () => PgStateStore.open(database.pool) };
    },
    async close() {
      await Promise.all(databases.map((d) => d.drop()));
    },
  };
}

const thing = (thingName: string, seq: number): ThingState => ({
  thingName,
  timestamp: 1_700_000_000_000 + seq,
  state: { temp: seq, label: `it's "${thingName}"` },
  nested: [{ type: "wheel", id: "1", state: { psi: 30 } }],
  seq,
  lastSource: "kafka:obs:3",
  lastOffset: 9_000_000_000 + seq,
  thresholds: [
    { ruleId: "r1", count: 2, lastFiredAt: 0, lastSeq: seq, version: 1 },
    { ruleId: "r2", count: 0, lastFiredAt: 1_700_000_000_500, lastSeq: seq - 1, version: 2 },
    // Inert: not kept.
    { ruleId: "r3", count: 0, lastFiredAt: 0 },
  ],
});

/** A state as a store keeps it: inert thresholds left out. */
const durable = (t: ThingState): ThingState => ({ ...t, thresholds: t.thresholds!.slice(0, 2) });

describe.each([sqliteBackend(), pgBackend()])("the engine's state store on $name", (backend) => {
  afterAll(() => backend.close());

  it("a store opened again holds what was flushed: states, nested objects, live thresholds, stream positions", async () => {
    const db = await backend.database();
    const store = await db.open();
    const things = Array.from({ length: 300 }, (_, i) => thing(`t${i}`, i + 1));
    for (const t of things) store.add(t);
    await store.flush(things);
    await store.close?.();
    const again = await db.open();
    for (const t of things) expect(again.thing(t.thingName)).toEqual(durable(t));
    expect(again.thing("never")).toBeUndefined();
  });

  it("flushes become durable in the order made, the last state of a thing winning", async () => {
    const db = await backend.database();
    const store = await db.open();
    const a = thing("a", 1);
    store.add(a);
    const first = store.flush([a]);
    a.seq = 2;
    a.state = { temp: 2 };
    const second = store.flush([a]);
    await Promise.all([first, second]);
    expect((await db.open()).thing("a")).toMatchObject({ seq: 2, state: { temp: 2 } });
  });

  it("a dropped rule's thresholds are gone after the next flush", async () => {
    const db = await backend.database();
    const store = await db.open();
    const a = thing("a", 1);
    store.add(a);
    await store.flush([a]);
    store.dropRule("r1");
    await store.flush([]);
    expect((await db.open()).thing("a")!.thresholds!.map((e) => e.ruleId)).toEqual(["r2"]);
  });

  it("reload forgets what was not flushed and reads the durable state", async () => {
    const db = await backend.database();
    const store = await db.open();
    const a = thing("a", 1);
    store.add(a);
    await store.flush([a]);
    a.seq = 99;
    store.add(thing("b", 1));
    await store.reload!();
    expect(store.thing("a")).toEqual(durable(thing("a", 1)));
    expect(store.thing("b")).toBeUndefined();
  });
});
