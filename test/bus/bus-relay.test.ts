import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  BusRelay,
  EventBus,
  PgBusEventStore,
  PgNotifyWakeup,
  SqliteBusEventStore,
  busMigrations,
  busPgMigrations,
  type BusEventStore,
  type BusEvents,
} from "../../src/bus/index.js";
import { createLogger } from "../../src/observability/index.js";
import { openDatabase, openPgPool, type Db, type PgPool } from "../../src/store/index.js";
import { startTestDms, type TestDms } from "../support/dms.js";
import { json } from "../support/http.js";
import { storeBackends } from "../support/backends.js";
import { createPgDatabase, type PgDatabase } from "../support/postgres.js";
import { until } from "../support/wait.js";
import { hot } from "../engine/support.js";

const logger = createLogger("silent");

/** Two processes' stores over one database (`openPair`): the relay cases hold on each. */
const backends = storeBackends<BusEventStore>({
  sqlite: { migrations: busMigrations, store: (db) => new SqliteBusEventStore(db) },
  pg: { migrations: busPgMigrations, store: (pool) => new PgBusEventStore(pool) },
});

/** A database of its own and a second pool on it; `pools` are both processes' pools. */
async function twoPgProcesses(): Promise<{ database: PgDatabase; pools: [PgPool, PgPool]; close(): Promise<void> }> {
  const database = await createPgDatabase(busPgMigrations);
  const second = openPgPool(database.url);
  return {
    database,
    pools: [database.pool, second],
    async close() {
      await second.end();
      await database.drop();
    },
  };
}

interface Process {
  bus: EventBus;
  relay: BusRelay;
}

describe.each(backends)("BusRelay: two processes' buses over one database ($name)", (backend) => {
  let stores: [BusEventStore, BusEventStore];
  let a: Process;
  let b: Process;
  beforeAll(async () => {
    stores = await backend.openPair();
    [a, b] = (await Promise.all(
      stores.map(async (store) => {
        const bus = new EventBus();
        // Polled by hand below; the interval is long enough never to run during the test.
        const relay = new BusRelay({ store, bus, logger, pollMs: 60_000 });
        await relay.start();
        return { bus, relay };
      }),
    )) as [Process, Process];
  });
  afterAll(async () => {
    await a.relay.stop();
    await b.relay.stop();
    await backend.close();
  });

  /** Polls `p` until nothing more arrives; resolves how many were delivered. */
  const drain = async (p: Process): Promise<number> => {
    let total = 0;
    for (let n = await p.relay.poll(); n > 0; n = await p.relay.poll()) total += n;
    return total;
  };

  it("hands another process's changes to followers (remote), not to `on` listeners, and never echoes its own", async () => {
    const followed: [BusEvents["thing.changed"], boolean][] = [];
    const local: BusEvents["thing.changed"][] = [];
    const offs = [
      b.bus.follow("thing.changed", (e, remote) => followed.push([e, remote])),
      b.bus.on("thing.changed", (e) => local.push(e)),
    ];
    a.bus.emit("thing.changed", { thingName: "x1", change: "created" });
    a.bus.emit("thing.changed", { thingName: "x2", change: "deleted" });
    expect(followed).toEqual([]);
    await until(async () => (await drain(b), followed.length === 2), 1000, "the changes written");
    expect(followed).toEqual([
      [{ thingName: "x1", change: "created" }, true],
      [{ thingName: "x2", change: "deleted" }, true],
    ]);
    expect(local).toEqual([]);
    expect(await a.relay.poll()).toBe(0);
    expect(await b.relay.poll()).toBe(0);

    b.bus.emit("thing.changed", { thingName: "x3", change: "updated" });
    expect(followed.at(-1)).toEqual([{ thingName: "x3", change: "updated" }, false]);
    expect(local).toEqual([{ thingName: "x3", change: "updated" }]);
    await until(async () => (await a.relay.poll()) === 1, 1000, "the change in the other process");
    for (const off of offs) off();
  });

  it("a follower that throws does not stop the changes after it", async () => {
    const seen: string[] = [];
    const off = b.bus.follow("thingGroup.deleted", (e) => {
      if (e.groupId === "bad") throw new Error("follower fails");
      seen.push(e.groupId);
    });
    a.bus.emit("thingGroup.deleted", { groupId: "bad" });
    a.bus.emit("thingGroup.deleted", { groupId: "good" });
    await until(async () => (await drain(b), seen.length === 1), 1000, "the change after the failing one");
    expect(seen).toEqual(["good"]);
    off();
  });

  it("delivers one process's changes in the order it made them, each once", async () => {
    const seen: string[] = [];
    const off = b.bus.follow("thing.changed", (e) => seen.push(e.thingName));
    const names = Array.from({ length: 300 }, (_, i) => `order-${i}`);
    for (const thingName of names) a.bus.emit("thing.changed", { thingName, change: "updated" });
    await until(async () => (await drain(b), seen.length >= names.length), 5000, "every change");
    expect(seen).toEqual(names);
    off();
  });

  it("forgets the changes written before the pruning time, and a reader after them reads on", async () => {
    const [store] = stores;
    const base = await store.lastSeq();
    await store.append("elsewhere", "domain.changed", JSON.stringify({ id: "old" }), Date.now() - 60_000);
    await store.append("elsewhere", "domain.changed", JSON.stringify({ id: "new" }), Date.now());
    const last = await store.lastSeq();
    expect(last).toBeGreaterThan(base);
    await store.prune(Date.now() - 30_000);
    const rows = await store.readAfter(base, "me", 10);
    expect(rows.map((r) => JSON.parse(r.payload) as { id: string })).toEqual([{ id: "new" }]);
    expect(rows[0]).toMatchObject({ seq: last, name: "domain.changed" });
    expect(await store.readAfter(last, "me", 10)).toEqual([]);
    expect(await store.readAfter(base, "elsewhere", 10)).toEqual([]);
    await drain(a);
    await drain(b);
  });
});

describe("BusRelay on SQLite: the change's transaction", () => {
  let dir: string;
  let dbs: Db[];
  let a: Process;
  let b: Process;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "dms-bus-"));
    dbs = [
      openDatabase({ dataDir: dir, migrations: busMigrations }),
      openDatabase({ dataDir: dir, migrations: busMigrations }),
    ];
    [a, b] = (await Promise.all(
      dbs.map(async (db) => {
        const bus = new EventBus();
        const relay = new BusRelay({ store: new SqliteBusEventStore(db), bus, logger, pollMs: 60_000 });
        await relay.start();
        return { bus, relay };
      }),
    )) as [Process, Process];
  });
  afterAll(async () => {
    await a.relay.stop();
    await b.relay.stop();
    for (const db of dbs) db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("a change emitted in a transaction that rolls back never reaches the other process", async () => {
    const seen: string[] = [];
    const off = b.bus.follow("domain.changed", (e) => seen.push(e.id));
    expect(() =>
      dbs[0]!.transaction(() => {
        a.bus.emit("domain.changed", { id: "gone", change: "created" });
        throw new Error("rolled back");
      })(),
    ).toThrow("rolled back");
    a.bus.emit("domain.changed", { id: "kept", change: "created" });
    await b.relay.poll();
    expect(seen).toEqual(["kept"]);
    off();
  });
});

describe("BusRelay on PostgreSQL: LISTEN/NOTIFY, with the table as the catch-up log", () => {
  let processes: Awaited<ReturnType<typeof twoPgProcesses>>;
  let a: Process & { wakeup: PgNotifyWakeup };
  let b: Process & { wakeup: PgNotifyWakeup };
  beforeAll(async () => {
    processes = await twoPgProcesses();
    [a, b] = (await Promise.all(
      processes.pools.map(async (pool) => {
        const bus = new EventBus();
        const wakeup = new PgNotifyWakeup({ pool, logger, retryMs: 100, heartbeatMs: 1000 });
        const relay = new BusRelay({ store: new PgBusEventStore(pool), bus, logger, wakeup });
        await relay.start();
        return { bus, relay, wakeup };
      }),
    )) as [typeof a, typeof b];
  });
  afterAll(async () => {
    await a.relay.stop();
    await b.relay.stop();
    await processes.close();
  });

  it("a change made through one process reaches the other's followers within a second, unpolled", async () => {
    const seen: { id: string; at: number }[] = [];
    const off = b.bus.follow("domain.changed", (e, remote) => remote && seen.push({ id: e.id, at: Date.now() }));
    const latencies: number[] = [];
    for (let i = 0; i < 20; i++) {
      const sent = Date.now();
      a.bus.emit("domain.changed", { id: `d${i}`, change: "created" });
      await until(() => seen.length === i + 1, 1000, `change ${i} in the other process`);
      latencies.push(seen[i]!.at - sent);
    }
    expect(seen.map((s) => s.id)).toEqual(Array.from({ length: 20 }, (_, i) => `d${i}`));
    expect(Math.max(...latencies)).toBeLessThan(1000);
    off();
  });

  it("carries a change larger than NOTIFY's 8000-byte payload: the notification points at the row", async () => {
    const seen: BusEvents["rule.changed"][] = [];
    const off = b.bus.follow("rule.changed", (e) => seen.push(e));
    const { id: _, ...body } = hot;
    const rule = { ...body, id: "big", description: "x".repeat(20_000) } as BusEvents["rule.changed"]["rule"];
    a.bus.emit("rule.changed", { id: "big", rule });
    await until(() => seen.length === 1, 1000, "the large change");
    expect(seen[0]).toEqual({ id: "big", rule });
    off();
  });

  it("changes two processes make at once reach a third process each once, as each made them in order", async () => {
    const third = openPgPool(processes.database.url);
    const bus = new EventBus();
    const relay = new BusRelay({
      store: new PgBusEventStore(third),
      bus,
      logger,
      wakeup: new PgNotifyWakeup({ pool: third, logger }),
    });
    await relay.start();
    try {
      const seen: string[] = [];
      bus.follow("thingType.changed", (e) => seen.push(e.id));
      const made = (p: string): string[] => Array.from({ length: 200 }, (_, i) => `${p}-${i}`);
      for (let i = 0; i < 200; i++) {
        a.bus.emit("thingType.changed", { id: made("a")[i]!, change: "created" });
        b.bus.emit("thingType.changed", { id: made("b")[i]!, change: "created" });
      }
      await until(() => seen.length >= 400, 5000, "every change in the third process");
      await new Promise((r) => setTimeout(r, 100));
      expect(seen).toHaveLength(400);
      expect(seen.filter((id) => id.startsWith("a-"))).toEqual(made("a"));
      expect(seen.filter((id) => id.startsWith("b-"))).toEqual(made("b"));
    } finally {
      await relay.stop();
      await third.end();
    }
  });

  it("a listener whose connection is cut connects again and catches up on what it missed, each change once", async () => {
    const seen: string[] = [];
    const off = b.bus.follow("thing.changed", (e) => seen.push(e.thingName));
    const cut = b.wakeup.listenerPid!;
    expect(cut).toBeGreaterThan(0);
    const { rows } = await processes.pools[0].query<{ done: boolean }>("SELECT pg_terminate_backend($1) AS done", [
      cut,
    ]);
    expect(rows[0]!.done).toBe(true);
    // Made while the other process is not listening: only the table has them.
    const missed = Array.from({ length: 5 }, (_, i) => `missed-${i}`);
    for (const thingName of missed) a.bus.emit("thing.changed", { thingName, change: "created" });
    await until(() => seen.length === missed.length, 3000, "the changes made during the cut");
    expect(seen).toEqual(missed);
    await until(() => b.wakeup.listenerPid !== undefined, 1000, "listening again");
    expect(b.wakeup.listenerPid).not.toBe(cut);

    a.bus.emit("thing.changed", { thingName: "after", change: "created" });
    await until(() => seen.length === missed.length + 1, 1000, "a change after the reconnect");
    expect(seen).toEqual([...missed, "after"]);
    off();
  });
});

describe("roles split over two processes on one data directory", () => {
  let rest: TestDms;
  let engine: TestDms;
  beforeAll(async () => {
    rest = await startTestDms({ env: { DMS_ROLES: "api", DMS_BUS_POLL_MS: "50" } });
    // The engine process has a REST interface of its own only to take POST /observations here.
    engine = await startTestDms({ dataDir: rest.dataDir, env: { DMS_ROLES: "api,engine", DMS_BUS_POLL_MS: "50" } });
  });
  afterAll(async () => {
    await engine.close();
    await rest.close();
  });

  const observe = async (thingName: string, temp: number) =>
    json(
      await engine.call("POST", "/observations", {
        user: "admin",
        body: [{ thingName, timestamp: Date.now(), state: { temp } }],
      }),
    );
  const ruleCount = (): number => engine.dms.services.engine!.engine.ruleCount;

  it("a rule created, disabled, enabled and removed through the REST process takes effect in the engine process within a second", async () => {
    const { id: _, ...body } = hot;
    expect(await observe("t1", 31)).toMatchObject({ accepted: 1, triggered: 0 });
    const created = await rest.call("POST", "/rules", { user: "admin", body: { ...body, id: "hot-remote" } });
    expect(created.status).toBe(200);
    await until(() => ruleCount() === 1, 1000, "the rule in the engine process");
    expect(await observe("t1", 32)).toMatchObject({ accepted: 1, triggered: 1 });

    await rest.call("PUT", "/rules/hot-remote", { user: "admin", body: { ...body, enabled: false } });
    await until(() => ruleCount() === 0, 1000, "the rule disabled there");
    expect(await observe("t1", 33)).toMatchObject({ accepted: 1, triggered: 0 });

    await rest.call("PUT", "/rules/hot-remote", { user: "admin", body: { ...body, enabled: true } });
    await until(() => ruleCount() === 1, 1000, "the rule enabled again");
    await rest.call("DELETE", "/rules/hot-remote", { user: "admin" });
    await until(() => ruleCount() === 0, 1000, "the rule removed there");
  });

  it("a thing created through the REST process is no longer unknown to the engine process", async () => {
    expect(await observe("late", 1)).toMatchObject({ accepted: 0, rejected: [{ reason: "unknown-thing" }] });
    const res = await rest.call("POST", "/admin/things", {
      user: "admin",
      body: { thingName: "late", thingType: "10", domain: "acme" },
    });
    expect(res.status).toBe(200);
    await until(async () => (await observe("late", 2)).accepted === 1, 1000, "the thing known there");
  });

  it("a domain created and an API key added and deleted in one process are followed by the other", async () => {
    expect((await engine.call("GET", "/admin/domains/north", { user: "admin" })).status).toBe(404);
    const created = await rest.call("POST", "/admin/domains", {
      user: "admin",
      body: { id: "north", parent: "acme", label: "Acme North" },
    });
    expect(created.status).toBe(200);
    await until(
      async () => (await engine.call("GET", "/admin/domains/north", { user: "admin" })).status === 200,
      1000,
      "the domain known there",
    );

    const added = await rest.call("POST", "/admin/api-keys", { user: "admin", body: { label: "second" } });
    expect(added.status).toBe(200);
    const { id, key } = (await json(added)) as { id: string; key: string };
    const login = (): Promise<Response> =>
      fetch(`${engine.url}/auth/login`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": key },
        body: JSON.stringify({ userName: "admin", password: "admin-pw" }),
      });
    await until(async () => (await login()).status === 200, 1000, "the new key to work in the other process");
    expect((await rest.call("DELETE", `/admin/api-keys/${id}`, { user: "admin" })).status).toBe(200);
    await until(async () => (await login()).status !== 200, 1000, "the deleted key to stop working there");
    expect((await login()).status).toBe(403);
  });
});
