import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  PgOutboxStore,
  actionsPgMigrations,
  type Claim,
  type Outbox,
  type StoredDelivery,
} from "../../src/actions/index.js";
import { migrations } from "../../src/migrations.js";
import { openDatabase, openPgPool, type Db, type PgPool } from "../../src/store/index.js";
import { standaloneOutbox } from "../support/outbox.js";
import { createPgDatabase, pgDatabaseUrl, type PgDatabase } from "../support/postgres.js";
import { Receiver, triggered, until } from "./support.js";

/**
 * Several `actions` processes on one PostgreSQL database: each outbox has a pool of its own (as a
 * process would) and delivers to a real HTTP receiver on loopback.
 */

/** The PostgreSQL store, counting what this outbox claimed, to see that every outbox took part. */
class CountingStore extends PgOutboxStore {
  claimed = 0;
  override async claim(c: Claim): Promise<StoredDelivery[]> {
    const taken = await super.claim(c);
    this.claimed += taken.length;
    return taken;
  }
}

const ENV = { DMS_WEBHOOK_ALLOW_PRIVATE: "true" };

let database: PgDatabase;
let pools: PgPool[];
let scratch: Db;
let outboxes: Outbox[] = [];

beforeAll(async () => {
  database = await createPgDatabase(actionsPgMigrations);
  pools = [0, 1].map(() => openPgPool(pgDatabaseUrl(database.name)));
  // Events and SET_RESOURCE are not used here; the outbox's deps want a database for them.
  scratch = openDatabase({ dataDir: ":memory:", migrations });
});
afterAll(async () => {
  scratch.close();
  await Promise.all(pools.map((p) => p.end()));
  await database.drop();
});
beforeEach(async () => {
  await database.pool.query("TRUNCATE action_outbox RESTART IDENTITY");
});
afterEach(async () => {
  await Promise.all(outboxes.map((o) => o.stop()));
  outboxes = [];
});

function outbox(pool: PgPool, options: { owner?: string; leaseMs?: number; concurrency?: number } = {}) {
  const store = new CountingStore(pool);
  const created = standaloneOutbox(scratch, { env: ENV, store, ...options });
  outboxes.push(created);
  return { outbox: created, store };
}

describe("outboxes of several processes on one PostgreSQL database", () => {
  let hook: Receiver;
  beforeAll(async () => {
    hook = await new Receiver().start();
  });
  afterAll(() => hook.close());

  it("deliver every action exactly once between them", async () => {
    hook.requests.length = 0;
    const pair = pools.map((pool) => outbox(pool, { concurrency: 8 }));
    await Promise.all(pair.map((p) => p.outbox.start()));
    const actions = Array.from({ length: 400 }, (_, n) =>
      triggered("WEBHOOK", { uri: `${hook.url}/hook`, body: `action ${n}` }, { thingName: `t${n}` }),
    );
    // Each process's engine hands its share, in batches, as observations come in.
    for (let i = 0; i < actions.length; i += 20) await pair[(i / 20) % 2]!.outbox.accept(actions.slice(i, i + 20));

    await until(() => hook.requests.length >= actions.length, "every action delivered", 30_000);
    await until(async () => (await pair[0]!.outbox.pendingCount()) === 0, "an empty outbox");
    const keys = hook.requests.map((r) => r.headers["idempotency-key"]);
    expect(keys).toHaveLength(actions.length);
    expect(new Set(keys)).toEqual(new Set(actions.map((a) => a.idempotencyKey)));
    expect(pair.map((p) => p.store.claimed > 0)).toEqual([true, true]);
    expect(pair[0]!.store.claimed + pair[1]!.store.claimed).toBe(actions.length);
  });

  it("at start takes over a claim whose lease ended, not one a live process holds", async () => {
    hook.requests.length = 0;
    const store = new PgOutboxStore(database.pool);
    const live = triggered("WEBHOOK", { uri: `${hook.url}/hook`, body: "held by a live process" });
    const orphan = triggered("WEBHOOK", { uri: `${hook.url}/hook`, body: "left by a dead process" });
    const now = Date.now();
    await store.accept([live], now);
    const [held] = await store.claim({ owner: "alive", now, limit: 1, leaseUntil: now + 60_000 });
    await store.accept([orphan], now);
    await store.claim({ owner: "died", now, limit: 1, leaseUntil: now - 1 });

    await outbox(pools[0]!, { owner: "starting" }).outbox.start();
    await until(() => hook.requests.length === 1, "the orphan delivered");
    // Time enough for a wrongful take-over to show.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(hook.requests.map((r) => r.body)).toEqual(["left by a dead process"]);
    expect(await store.get(held!.id)).toMatchObject({ status: "delivering", claimedBy: "alive" });
    expect(await store.countWaiting()).toBe(1);
  });
});

describe("a delivery slower than the lease", () => {
  let server: Server;
  let url = "";
  const received: string[] = [];
  beforeAll(async () => {
    // Answers each request after a second: longer than the lease, so only renewals keep the claim.
    server = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        received.push(String(req.headers["idempotency-key"]));
        setTimeout(() => res.end("{}"), 1_000);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it("stays its owner's while it renews, so another process does not send it again", async () => {
    const first = outbox(pools[0]!, { leaseMs: 300 });
    await first.outbox.start();
    const action = triggered("WEBHOOK", { uri: `${url}/slow`, body: "slow" });
    await first.outbox.accept([action]);
    await until(() => received.length === 1, "the first attempt under way");
    // Another process starts and keeps sweeping ended leases while the slow delivery runs.
    const second = outbox(pools[1]!, { leaseMs: 300 });
    await second.outbox.start();
    await until(async () => (await first.outbox.pendingCount()) === 0, "delivered", 5_000);
    expect(received).toEqual([action.idempotencyKey]);
    expect(second.store.claimed).toBe(0);
  });
});
