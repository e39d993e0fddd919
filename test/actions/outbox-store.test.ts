import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { PgOutboxStore, SqliteOutboxStore, actionsPgMigrations, type OutboxStore } from "../../src/actions/index.js";
import { migrations } from "../../src/migrations.js";
import { storeBackends } from "../support/backends.js";
import { triggered } from "./support.js";

/**
 * One contract, every implementation of the outbox's store: what the outbox's workers, several
 * outboxes sharing a database and the dead-letter API rely on, whichever database is behind it.
 */

const failed = (attempts: number, lastError: string) => ({
  status: "dead" as const,
  attempts,
  nextAttemptAt: 0,
  lastError,
});

const claim = (owner: string, now: number, limit: number, leaseUntil = now + 30_000) => ({
  owner,
  now,
  limit,
  leaseUntil,
});

const backends = storeBackends<OutboxStore>({
  sqlite: { migrations, store: (db) => new SqliteOutboxStore(db) },
  pg: { migrations: actionsPgMigrations, store: (pool) => new PgOutboxStore(pool) },
});

describe.each(backends)("outbox store contract: $name", (backend) => {
  let store: OutboxStore;
  let other: OutboxStore;
  beforeEach(async () => {
    [store, other] = await backend.openPair();
  });
  afterAll(() => backend.close());

  it("keeps an action once per idempotency key and hands due ones out once, the earliest due first", async () => {
    const a = triggered("WEBHOOK", { uri: "http://a" });
    const b = triggered("EMAIL", { to: "x@y" }, { thingName: "t2" });
    await store.accept([a, b], 1_000);
    await store.accept([a], 2_000);
    expect(await store.countWaiting()).toBe(2);
    expect(await store.oldestWaiting()).toBe(1_000);
    expect(await store.nextDue()).toBe(1_000);

    expect(await store.claim(claim("p1", 999, 10))).toEqual([]);
    const [first] = await store.claim(claim("p1", 1_000, 1, 31_000));
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
      claimedBy: "p1",
      leaseUntil: 31_000,
    });
    // A claimed delivery is not handed out again, nor due; the other one is.
    expect((await store.claim(claim("p1", 5_000, 10))).map((d) => d.idempotencyKey)).toEqual([b.idempotencyKey]);
    expect(await store.nextDue()).toBeUndefined();

    // Back to pending, due later: due again then, and a restart of p1 makes the other one pending too.
    expect(
      await store.settle(first!.id, { status: "pending", attempts: 1, nextAttemptAt: 9_000, lastError: "503" }, 6_000),
    ).toBe(true);
    expect(await store.get(first!.id)).toMatchObject({
      status: "pending",
      attempts: 1,
      lastError: "503",
      updatedAt: 6_000,
      claimedBy: null,
      leaseUntil: null,
    });
    expect(await store.releaseClaims(6_000, "p1")).toBe(1);
    expect(await store.nextDue()).toBe(1_000);
    // The earliest due first when the pool has room for one only.
    expect((await store.claim(claim("p1", 9_000, 1))).map((d) => d.idempotencyKey)).toEqual([b.idempotencyKey]);
    expect((await store.claim(claim("p1", 9_000, 1))).map((d) => d.idempotencyKey)).toEqual([a.idempotencyKey]);
  });

  it("a live owner's claims stay its own at another's start, while ended leases go again", async () => {
    await store.accept(
      [1, 2, 3].map((n) => triggered("WEBHOOK", { uri: `http://${n}` })),
      1_000,
    );
    const [live] = await store.claim(claim("alive", 1_000, 1, 10_000));
    const [dead] = await store.claim(claim("died", 1_000, 1, 2_000));
    const [renewed] = await store.claim(claim("busy", 1_000, 1, 2_000));
    await store.renew("busy", 20_000);

    // A third process starts at 5 000: only the claim whose lease ended is released.
    expect(await other.releaseClaims(5_000, "starting")).toBe(1);
    expect(await other.get(dead!.id)).toMatchObject({ status: "pending", claimedBy: null });
    expect(await other.get(live!.id)).toMatchObject({ status: "delivering", claimedBy: "alive", leaseUntil: 10_000 });
    expect(await other.get(renewed!.id)).toMatchObject({ status: "delivering", claimedBy: "busy", leaseUntil: 20_000 });
    expect((await other.claim(claim("starting", 5_000, 10))).map((d) => d.id)).toEqual([dead!.id]);

    // The owner whose claim was taken over cannot settle it any more; the new owner can.
    const delivered = { status: "delivered" as const, attempts: 1, nextAttemptAt: 1_000, lastError: null };
    expect(await store.settle(dead!.id, delivered, 6_000, "died")).toBe(false);
    expect(await other.settle(dead!.id, delivered, 6_000, "starting")).toBe(true);
    expect(await store.settle(live!.id, delivered, 6_000, "alive")).toBe(true);
    expect(await store.countWaiting()).toBe(1);
  });

  it("two stores on one database claiming at once never take the same delivery", async () => {
    const actions = Array.from({ length: 200 }, (_, n) => triggered("WEBHOOK", { uri: `http://${n}` }));
    await store.accept(actions, 1_000);
    const claims = await Promise.all(
      Array.from({ length: 20 }, (_, n) => (n % 2 ? store : other).claim(claim(`p${n % 2}`, 1_000, 15))),
    );
    const ids = claims.flat().map((d) => d.id);
    expect(ids).toHaveLength(200);
    expect(new Set(ids).size).toBe(200);
  });

  it("prunes delivered ones only, and lists dead letters of the given domains newest first, by pages", async () => {
    const actions = [
      triggered("WEBHOOK", { uri: "http://1" }),
      triggered("WEBHOOK", { uri: "http://2" }, { domain: "east" }),
      triggered("WEBHOOK", { uri: "http://3" }),
      triggered("WEBHOOK", { uri: "http://4" }),
    ];
    await store.accept(actions, 1_000);
    const [d1, d2, d3, d4] = (await store.claim(claim("p1", 1_000, 10))).sort((x, y) => x.id - y.id);
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
