import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  PgEventStore,
  SqliteEventStore,
  eventsMigrations,
  eventsPgMigrations,
  type EventStore,
  type NewEvent,
} from "../../src/events/index.js";
import { storeBackends } from "../support/backends.js";

let now = Date.parse("2026-03-02T00:00:00.456Z");
const clock = (): number => now;

/** One contract, every implementation of the event store seam: what the EVENT action and GET /events rely on. */
const backends = storeBackends<EventStore>({
  sqlite: { migrations: eventsMigrations, store: (db) => new SqliteEventStore(db, clock) },
  pg: { migrations: eventsPgMigrations, store: (pool) => new PgEventStore(pool, clock) },
});

const T0 = Date.parse("2026-03-01T10:00:00.123Z");

function event(n: number, over: Partial<NewEvent> = {}): NewEvent {
  return {
    idempotencyKey: `delivery-${n}`,
    ruleId: "hot",
    thingName: `t${n % 3}`,
    thingType: "10",
    domain: n % 2 === 0 ? "acme" : "east",
    classification: n % 4 === 0 ? "ALARM" : "WARNING",
    message: `event ${n}`,
    acknowledgmentRequired: n % 2 === 0,
    time: T0 + n * 1000,
    ...(n % 5 === 0 ? {} : { category: "heat" }),
    ...over,
  };
}

describe.each(backends)("event store contract: $name", (backend) => {
  let store: EventStore;
  beforeAll(async () => {
    now = Date.parse("2026-03-02T00:00:00.456Z");
    store = await backend.open();
    for (let n = 1; n <= 12; n++) await store.insert(event(n));
  });
  afterAll(() => backend.close());

  it("stores an event once per idempotency key and reads it back in domain types", async () => {
    const first = await store.insert(event(100, { category: "cat" }));
    expect(first.created).toBe(true);
    expect(first.event).toEqual({
      id: first.event.id,
      ruleId: "hot",
      category: "cat",
      thingName: "t1",
      thingType: "10",
      domain: "acme",
      classification: "ALARM",
      message: "event 100",
      acknowledgmentRequired: true,
      acknowledged: false,
      time: "2026-03-01T10:01:40.123Z",
    });
    expect(first.event.id).toMatch(/^\d+$/);
    const again = await store.insert(event(100, { message: "redelivered" }));
    expect(again).toEqual({ event: first.event, created: false });
    expect(await store.get(first.event.id)).toEqual(first.event);
    // An event without a category has none, not null.
    const bare = await store.insert(event(105));
    expect("category" in bare.event).toBe(false);
  });

  it("answers no event for ids that are not one", async () => {
    for (const id of ["999999", "abc", "-1", "1e3", "12345678901234567890", ""]) {
      expect(await store.get(id)).toBeUndefined();
      expect(await store.acknowledge(id, "alice")).toBeUndefined();
    }
  });

  it("acknowledges once: a second acknowledgement keeps the first time and user", async () => {
    const { event: e } = await store.insert(event(200));
    const acked = await store.acknowledge(e.id, "alice");
    expect(acked).toEqual({
      ...e,
      acknowledged: true,
      acknowledgedAt: "2026-03-02T00:00:00.456Z",
      acknowledgedBy: "alice",
    });
    now += 60_000;
    expect(await store.acknowledge(e.id, "bob")).toEqual(acked);
    expect(await store.get(e.id)).toEqual(acked);
  });

  it("lists newest first within the caller's domains, by every filter", async () => {
    const messages = async (q: Partial<Parameters<EventStore["list"]>[0]>): Promise<string[]> =>
      (await store.list({ domains: ["acme", "east"], size: 50, ...q })).events
        .map((e) => e.message)
        .filter((m) => /^event \d$|^event 1[0-2]$/.test(m));
    expect(await messages({})).toEqual([12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1].map((n) => `event ${n}`));
    expect(await messages({ domains: ["east"] })).toEqual([11, 9, 7, 5, 3, 1].map((n) => `event ${n}`));
    expect(await store.list({ domains: [], size: 10 })).toEqual({ events: [] });
    expect(await messages({ thingName: "t0" })).toEqual([12, 9, 6, 3].map((n) => `event ${n}`));
    expect(await messages({ category: "heat", domains: ["acme"] })).toEqual([12, 8, 6, 4, 2].map((n) => `event ${n}`));
    expect(await messages({ classification: "ALARM" })).toEqual([12, 8, 4].map((n) => `event ${n}`));
    // from and to are inclusive, to the millisecond.
    expect(await messages({ from: T0 + 3000, to: T0 + 5000 })).toEqual([5, 4, 3].map((n) => `event ${n}`));
    expect(await messages({ from: T0 + 3001, to: T0 + 4999 })).toEqual(["event 4"]);
    const { event: e7 } = await store.insert(event(7));
    await store.acknowledge(e7.id, "carol");
    expect(await messages({ acknowledged: true })).toEqual(["event 7"]);
    expect(await messages({ acknowledged: false, domains: ["east"] })).toEqual(
      [11, 9, 5, 3, 1].map((n) => `event ${n}`),
    );
  });

  it("pages with a marker: the next page holds the events older than the last one shown", async () => {
    const q = { domains: ["acme"], thingName: "t2", to: T0 + 12_000, size: 1 };
    const first = await store.list(q);
    expect(first.events.map((e) => e.message)).toEqual(["event 8"]);
    expect(first.nextMarker).toBe(first.events[0]!.id);
    const second = await store.list({ ...q, marker: Number(first.nextMarker) });
    expect(second.events.map((e) => e.message)).toEqual(["event 2"]);
    expect(second.nextMarker).toBeUndefined();
  });
});
