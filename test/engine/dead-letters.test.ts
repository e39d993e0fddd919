import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  PgDeadLetterStore,
  SqliteDeadLetterStore,
  deadLetterMigrations,
  deadLetterPgMigrations,
  type DeadLetter,
  type DeadLetterStore,
} from "../../src/engine/index.js";
import { storeBackends } from "../support/backends.js";

/**
 * The engine's dead-letter store on its own, one contract for every implementation: what the
 * engine, the MQTT source and GET /observations/dead-letters rely on.
 */
const backends = storeBackends<DeadLetterStore>({
  sqlite: { migrations: deadLetterMigrations, store: (db) => new SqliteDeadLetterStore(db) },
  pg: { migrations: deadLetterPgMigrations, store: (pool) => new PgDeadLetterStore(pool) },
});

const letter = (n: number, reason: DeadLetter["reason"]): DeadLetter => ({
  source: "kafka:obs",
  partition: 1,
  offset: String(n),
  thingName: `t${n}`,
  domain: "acme",
  reason,
  message: `message ${n}`,
  payload: `{"n":${n}}`,
  createdAt: Date.parse("2026-03-01T10:00:00.000Z") + n,
});

describe.each(backends)("dead-letter store contract: $name", (backend) => {
  let store: DeadLetterStore;
  beforeAll(async () => {
    store = await backend.open();
  });
  afterAll(() => backend.close());

  it("keeps a batch as given and lists it newest first, by reason, from a marker", async () => {
    await store.insertBatch([]);
    expect(await store.count()).toBe(0);
    await store.insertBatch([letter(1, "not-json"), letter(2, "unknown-thing"), letter(3, "not-json")]);
    await store.insertBatch([{ source: "http", reason: "undecodable", message: "bytes", createdAt: 5 }]);
    expect(await store.count()).toBe(4);

    const all = await store.list({ limit: 10 });
    expect(all.map((d) => d.offset ?? d.source)).toEqual(["http", "3", "2", "1"]);
    expect(all.every((d) => typeof d.id === "number")).toBe(true);
    const { id: _, ...first } = all[3]!;
    expect(first).toEqual(letter(1, "not-json"));
    // Absent columns come back absent, not null.
    expect(all[0]).toEqual({ id: all[0]!.id, source: "http", reason: "undecodable", message: "bytes", createdAt: 5 });

    expect((await store.list({ limit: 10, reason: "not-json" })).map((d) => d.offset)).toEqual(["3", "1"]);
    const page = await store.list({ limit: 2 });
    expect(page).toHaveLength(2);
    expect((await store.list({ limit: 10, before: page[1]!.id })).map((d) => d.offset)).toEqual(["2", "1"]);
  });

  it("takes a large batch whole, each letter's fields in its own row", async () => {
    const batch = Array.from({ length: 2000 }, (_, i) => letter(10_000 + i, i % 2 ? "bad-timestamp" : "wrong-type"));
    await store.insertBatch(batch);
    expect(await store.count()).toBe(2004);
    const newest = await store.list({ limit: 2000, reason: "bad-timestamp" });
    expect(newest).toHaveLength(1000);
    expect(newest.map(({ id: _, ...d }) => d)).toEqual(batch.filter((_, i) => i % 2).reverse());
  });
});
