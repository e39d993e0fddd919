import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SqliteOutboxStore, type OutboxStore } from "../../src/actions/index.js";
import { migrations } from "../../src/migrations.js";
import { openDatabase, type Db } from "../../src/store/index.js";
import { triggered } from "./support.js";

/** The outbox's store on its own: what the outbox's workers and the dead-letter API rely on. */

let db: Db;
let store: OutboxStore;

beforeEach(() => {
  db = openDatabase({ dataDir: ":memory:", migrations });
  store = new SqliteOutboxStore(db);
});
afterEach(() => db.close());

const failed = (attempts: number, lastError: string) => ({
  status: "dead" as const,
  attempts,
  nextAttemptAt: 0,
  lastError,
});

describe("SqliteOutboxStore", () => {
  it("keeps an action once per idempotency key and hands due ones out once, the earliest due first", async () => {
    const a = triggered("WEBHOOK", { uri: "http://a" });
    const b = triggered("EMAIL", { to: "x@y" }, { thingName: "t2" });
    await store.accept([a, b], 1_000);
    await store.accept([a], 2_000);
    expect(await store.countWaiting()).toBe(2);
    expect(await store.oldestWaiting()).toBe(1_000);
    expect(await store.nextDue()).toBe(1_000);

    expect(await store.claim(999, 10)).toEqual([]);
    const [first] = await store.claim(1_000, 1);
    expect(first).toMatchObject({
      idempotencyKey: a.idempotencyKey,
      ruleId: "rule-1",
      ruleDomain: "acme",
      thingName: "t1",
      type: "WEBHOOK",
      config: { uri: "http://a" },
      payload: a.payload,
      status: "delivering",
      attempts: 0,
      lastError: null,
    });
    // A claimed delivery is not handed out again, nor due; the other one is.
    expect((await store.claim(5_000, 10)).map((d) => d.idempotencyKey)).toEqual([b.idempotencyKey]);
    expect(await store.nextDue()).toBeUndefined();

    // Back to pending, due later: due again then, and a restart's release makes the other one pending too.
    await store.settle(first!.id, { status: "pending", attempts: 1, nextAttemptAt: 9_000, lastError: "503" }, 6_000);
    expect(await store.get(first!.id)).toMatchObject({
      status: "pending",
      attempts: 1,
      lastError: "503",
      updatedAt: 6_000,
    });
    await store.releaseClaims();
    expect(await store.nextDue()).toBe(1_000);
    // The earliest due first when the pool has room for one only.
    expect((await store.claim(9_000, 1)).map((d) => d.idempotencyKey)).toEqual([b.idempotencyKey]);
    expect((await store.claim(9_000, 1)).map((d) => d.idempotencyKey)).toEqual([a.idempotencyKey]);
  });

  it("prunes delivered ones only, and lists dead letters of the given domains newest first, by pages", async () => {
    const actions = [
      triggered("WEBHOOK", { uri: "http://1" }),
      triggered("WEBHOOK", { uri: "http://2" }, { domain: "east" }),
      triggered("WEBHOOK", { uri: "http://3" }),
      triggered("WEBHOOK", { uri: "http://4" }),
    ];
    await store.accept(actions, 1_000);
    const [d1, d2, d3, d4] = (await store.claim(1_000, 10)).sort((x, y) => x.id - y.id);
    await store.settle(d1!.id, failed(3, "gone"), 2_000);
    await store.settle(d2!.id, failed(1, "gone"), 2_000);
    await store.settle(d3!.id, failed(1, "gone"), 2_000);
    await store.settle(d4!.id, { status: "delivered", attempts: 1, nextAttemptAt: 1_000, lastError: null }, 3_000);
    expect([await store.countWaiting(), await store.countDead(), await store.oldestWaiting()]).toEqual([
      0,
      3,
      undefined,
    ]);

    expect(await store.pruneDelivered(3_000)).toBe(0);
    expect(await store.pruneDelivered(3_001)).toBe(1);
    expect(await store.get(d4!.id)).toBeUndefined();

    expect(await store.deadLetters([], 10)).toEqual([]);
    expect((await store.deadLetters(["acme"], 10)).map((d) => d.id)).toEqual([d3!.id, d1!.id]);
    expect((await store.deadLetters(["acme", "east"], 2)).map((d) => d.id)).toEqual([d3!.id, d2!.id]);
    expect((await store.deadLetters(["acme", "east"], 2, d2!.id)).map((d) => d.id)).toEqual([d1!.id]);
    expect(await store.get(d1!.id)).toMatchObject({ status: "dead", attempts: 3, lastError: "gone" });
  });
});
