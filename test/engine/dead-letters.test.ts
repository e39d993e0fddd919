import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SqliteDeadLetterStore, type DeadLetter, type DeadLetterStore } from "../../src/engine/index.js";
import { migrations } from "../../src/migrations.js";
import { openDatabase, type Db } from "../../src/store/index.js";

/** The engine's dead-letter store on its own: what the engine, the MQTT source and GET /observations/dead-letters rely on. */

let db: Db;
let store: DeadLetterStore;

beforeAll(() => {
  db = openDatabase({ dataDir: ":memory:", migrations });
  store = new SqliteDeadLetterStore(db);
});
afterAll(() => db.close());

const letter = (n: number, reason: DeadLetter["reason"]): DeadLetter => ({
  source: "kafka:obs",
  partition: 1,
  offset: String(n),
  thingName: `t${n}`,
  domain: "acme",
  reason,
  message: `message ${n}`,
  payload: `{"n":${n}}`,
  createdAt: 1_000 + n,
});

describe("SqliteDeadLetterStore", () => {
  it("keeps a batch as given and lists it newest first, by reason, from a marker", async () => {
    await store.insertBatch([]);
    expect(await store.count()).toBe(0);
    await store.insertBatch([letter(1, "not-json"), letter(2, "unknown-thing"), letter(3, "not-json")]);
    await store.insertBatch([{ source: "http", reason: "undecodable", message: "bytes", createdAt: 5 }]);
    expect(await store.count()).toBe(4);

    const all = await store.list({ limit: 10 });
    expect(all.map((d) => d.offset ?? d.source)).toEqual(["http", "3", "2", "1"]);
    const { id: _, ...first } = all[3]!;
    expect(first).toEqual(letter(1, "not-json"));
    // Absent columns come back absent, not null.
    expect(all[0]).toEqual({ id: all[0]!.id, source: "http", reason: "undecodable", message: "bytes", createdAt: 5 });

    expect((await store.list({ limit: 10, reason: "not-json" })).map((d) => d.offset)).toEqual(["3", "1"]);
    const page = await store.list({ limit: 2 });
    expect(page).toHaveLength(2);
    expect((await store.list({ limit: 10, before: page[1]!.id })).map((d) => d.offset)).toEqual(["2", "1"]);
  });
});
