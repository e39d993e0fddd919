import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BusRelay, EventBus, SqliteBusEventStore, type BusEvents } from "../../src/bus/index.js";
import { migrations } from "../../src/migrations.js";
import { createLogger } from "../../src/observability/index.js";
import { openDatabase, type Db } from "../../src/store/index.js";
import { startTestDms, type TestDms } from "../support/dms.js";
import { json } from "../support/http.js";
import { until } from "../support/wait.js";
import { hot } from "../engine/support.js";

const logger = createLogger("silent");

describe("BusRelay: two processes' buses over one database file", () => {
  let dir: string;
  let dbs: Db[];
  let a: { bus: EventBus; relay: BusRelay };
  let b: { bus: EventBus; relay: BusRelay };
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "dms-bus-"));
    // Two connections to one file, as two processes have.
    dbs = [openDatabase({ dataDir: dir, migrations }), openDatabase({ dataDir: dir, migrations })];
    [a, b] = (await Promise.all(
      dbs.map(async (db) => {
        const bus = new EventBus();
        // Polled by hand below; the interval is long enough never to run during the test.
        const relay = new BusRelay({ store: new SqliteBusEventStore(db), bus, logger, pollMs: 60_000 });
        await relay.start();
        return { bus, relay };
      }),
    )) as [typeof a, typeof b];
  });
  afterAll(() => {
    a.relay.stop();
    b.relay.stop();
    for (const db of dbs) db.close();
    rmSync(dir, { recursive: true, force: true });
  });

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
    expect(await b.relay.poll()).toBe(2);
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
    expect(await a.relay.poll()).toBe(1);
    for (const off of offs) off();
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

  it("a follower that throws does not stop the changes after it", async () => {
    const seen: string[] = [];
    const off = b.bus.follow("thingGroup.deleted", (e) => {
      if (e.groupId === "bad") throw new Error("follower fails");
      seen.push(e.groupId);
    });
    a.bus.emit("thingGroup.deleted", { groupId: "bad" });
    a.bus.emit("thingGroup.deleted", { groupId: "good" });
    expect(await b.relay.poll()).toBe(2);
    expect(seen).toEqual(["good"]);
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
