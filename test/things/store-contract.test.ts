import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Identity, SqliteIdentityStore } from "../../src/auth/index.js";
import { EventBus } from "../../src/bus/index.js";
import { migrations } from "../../src/migrations.js";
import { openDatabase, type Db } from "../../src/store/index.js";
import {
  PgThingStore,
  SqliteThingStore,
  ThingRegistry,
  thingsPgMigrations,
  type ThingStore,
  type ThingWriteItem,
  type ThingWriteResult,
} from "../../src/things/index.js";
import { createPgDatabase, type PgDatabase } from "../support/postgres.js";

/**
 * One contract, every implementation of the thing store seam: what the registry and its
 * in-memory view rely on must hold whichever database is behind it.
 */
interface Backend {
  name: string;
  /** A store over an empty database of its own, with the domains `acme` and `east`. */
  open(): Promise<ThingStore>;
  close(): Promise<void>;
}

function sqliteBackend(): Backend {
  const dbs: Db[] = [];
  return {
    name: "SQLite",
    async open() {
      const db = openDatabase({ dataDir: ":memory:", migrations });
      dbs.push(db);
      // Things name their domain (a foreign key in SQLite): the tree the cases use.
      const identity = await Identity.open(new SqliteIdentityStore(db), new EventBus());
      await identity.createDomain("acme", "root");
      await identity.createDomain("east", "acme");
      return new SqliteThingStore(db);
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
    async open() {
      const database = await createPgDatabase(thingsPgMigrations);
      databases.push(database);
      return new PgThingStore(database.pool);
    },
    async close() {
      await Promise.all(databases.map((d) => d.drop()));
    },
  };
}

const sensor = {
  id: "sensor",
  label: "Sensor",
  domain: "acme",
  resources: [
    { name: "temp", dataType: "double" as const, resourceType: "thing" as const },
    { name: "alarm", dataType: "boolean" as const, resourceType: "virtual" as const },
  ],
};

function item(
  thingName: string,
  over: Partial<ThingWriteItem> & { serial?: string; label?: string } = {},
): ThingWriteItem {
  const { serial, label, ...rest } = over;
  return {
    input: { thingName, thingType: "sensor", domain: "acme", serial, label },
    mode: "upsert",
    secretHash: null,
    ...rest,
  };
}

const changeOf = (r: ThingWriteResult): string => ("error" in r ? r.error.key : r.change);

describe.each([sqliteBackend(), pgBackend()])("thing store contract: $name", (backend) => {
  let store: ThingStore;
  beforeAll(async () => {
    store = await backend.open();
    await store.putThingType(sensor);
  });
  afterAll(() => backend.close());

  it("answers a thing type as stored, and replaces its resources on a second put", async () => {
    const stored = await store.readThingType("sensor");
    expect(stored).toMatchObject({ id: "sensor", label: "Sensor", domain: "acme" });
    expect(stored!.resources.map((r) => r.name).sort()).toEqual(["alarm", "temp"]);
    expect(Date.parse(stored!.createdAt)).not.toBeNaN();
    const other = await store.putThingType({ id: "other", label: "Other", domain: "east", resources: [] });
    expect(other).toMatchObject({ id: "other", resources: [] });
    const replaced = await store.putThingType({ ...other, label: "Renamed", resources: [sensor.resources[0]!] });
    expect(replaced).toMatchObject({ label: "Renamed", resources: [sensor.resources[0]] });
    expect(replaced.createdAt).toBe(other.createdAt);
    expect(await store.readThingType("missing")).toBeUndefined();
  });

  it("writes a batch each thing on its own: created, unchanged, updated, and the refusals", async () => {
    const first = await store.writeThings([item("w1", { serial: "S-1" }), item("w2"), item("w3")]);
    expect(first.map(changeOf)).toEqual(["created", "created", "created"]);
    const second = await store.writeThings([
      item("w1"),
      item("w2", { label: "two" }),
      item("w3", { serial: "S-1" }),
      item("w1", { mode: "create" }),
      item("w-new", { mode: "update" }),
      { ...item("w4"), input: { thingName: "w4", thingType: "nope", domain: "acme" } },
    ]);
    expect(second.map(changeOf)).toEqual([
      "unchanged",
      "updated",
      "ALREADY_EXISTS",
      "ALREADY_EXISTS",
      "THING_NOT_FOUND",
      "THING_TYPE_NOT_FOUND",
    ]);
    const stored = await store.storedThings(["w1", "w2", "w3", "w-new"]);
    expect([...stored.keys()].sort()).toEqual(["w1", "w2", "w3"]);
    expect(stored.get("w1")!.thing).toMatchObject({ serial: "S-1", label: null, domain: "acme" });
    expect(stored.get("w2")!.thing.label).toBe("two");
    expect(stored.get("w3")!.thing.serial).toBeNull();
  });

  it("decides a bulk as if its items were written one after the other: names and serials it writes twice", async () => {
    await store.writeThings([
      item("b1", { serial: "B-1", label: "one" }),
      item("b2", { serial: "B-2" }),
      item("b3", { serial: "B-3" }),
    ]);
    const results = await store.writeThings([
      item("b-new", { serial: "B-9" }),
      item("b1", { label: "one" }),
      item("b3", { mode: "create" }),
      item("b-missing", { mode: "update" }),
      // Claimed by b-new a moment ago in this very bulk.
      item("b-dup", { serial: "B-9" }),
      item("b-new", { mode: "create" }),
      item("b-new", { label: "again", secretHash: "hash-new" }),
      item("b-new", { label: "again", secretHash: "hash-new" }),
      // b2 frees B-2 for b4; b1 cannot have B-5, which b2 holds by then.
      item("b2", { serial: "B-5" }),
      item("b4", { serial: "B-2" }),
      item("b1", { serial: "B-5" }),
      // b3 leaves B-3 for b1, which b1 then takes.
      item("b3", { serial: "B-6" }),
      item("b1", { serial: "B-3" }),
    ]);
    expect(results.map(changeOf)).toEqual([
      "created",
      "unchanged",
      "ALREADY_EXISTS",
      "THING_NOT_FOUND",
      "ALREADY_EXISTS",
      "ALREADY_EXISTS",
      "updated",
      "unchanged",
      "updated",
      "created",
      "ALREADY_EXISTS",
      "updated",
      "updated",
    ]);
    const refusal = (i: number) => {
      const r = results[i]!;
      return "error" in r ? { property: r.error.property, message: r.error.message } : r.change;
    };
    expect(refusal(2)).toMatchObject({ property: "thingName" });
    expect(refusal(4)).toEqual({ property: "serial", message: "Serial B-9 belongs to thing b-new" });
    expect(refusal(5)).toMatchObject({ property: "thingName" });
    expect(refusal(10)).toEqual({ property: "serial", message: "Serial B-5 belongs to thing b2" });
    const thingAt = (i: number) => {
      const r = results[i]!;
      if ("error" in r) throw new Error(`item ${i} refused: ${r.error.message}`);
      return r.thing;
    };
    // Each result is the thing as its item left it; the store holds what the last one left.
    expect(thingAt(0)).toMatchObject({ thingName: "b-new", serial: "B-9", label: null });
    expect(thingAt(0).createdAt).toBe(thingAt(0).updatedAt);
    expect(thingAt(6)).toMatchObject({ thingName: "b-new", serial: "B-9", label: "again" });
    expect(thingAt(7)).toEqual(thingAt(6));
    expect(thingAt(8)).toMatchObject({ thingName: "b2", serial: "B-5" });
    expect(thingAt(12)).toMatchObject({ thingName: "b1", serial: "B-3", label: "one" });
    const stored = await store.storedThings(["b1", "b2", "b3", "b4", "b-new", "b-dup", "b-missing"]);
    expect([...stored.keys()].sort()).toEqual(["b-new", "b1", "b2", "b3", "b4"]);
    expect(stored.get("b-new")).toEqual({ thing: thingAt(7), secretHash: "hash-new" });
    expect(stored.get("b1")!.thing).toEqual(thingAt(12));
    expect(stored.get("b2")!.thing).toEqual(thingAt(8));
    expect(stored.get("b3")!.thing).toEqual(thingAt(11));
    expect(stored.get("b4")!.thing).toEqual(thingAt(9));
  });

  it("moves serials along a chain within a bulk, and keeps the digest the bulk's last item of a thing leaves", async () => {
    await store.writeThings([item("c1", { serial: "C-1" }), item("c2", { serial: "C-2" })]);
    // c1 leaves C-1 for C-3, then c2 takes C-1: one after the other, no serial is held twice.
    const moved = await store.writeThings([item("c1", { serial: "C-3" }), item("c2", { serial: "C-1" })]);
    expect(moved.map(changeOf)).toEqual(["updated", "updated"]);
    const stored = await store.storedThings(["c1", "c2"]);
    expect([stored.get("c1")!.thing.serial, stored.get("c2")!.thing.serial]).toEqual(["C-3", "C-1"]);

    await store.writeThings([
      item("q1", { digest: "x1" }),
      item("q1", { label: "by hand" }),
      item("q2", { label: "by hand" }),
      item("q2", { digest: "x2" }),
      item("q3", { digest: "x3" }),
      // Unchanged and from another hand: the digest stays.
      item("q3"),
    ]);
    expect(await store.provisionDigests(["q1", "q2", "q3"])).toEqual(
      new Map([
        ["q2", "x2"],
        ["q3", "x3"],
      ]),
    );
  });

  it("keeps a thing's secret hash, replaced only while it still is the expected one", async () => {
    await store.writeThings([item("s1", { secretHash: "hash-1" })]);
    expect(await store.secretHash("s1")).toBe("hash-1");
    expect(await store.secretHash("s-missing")).toBeUndefined();
    await store.writeThings([item("s2")]);
    expect(await store.secretHash("s2")).toBeNull();
    // null keeps the stored hash; the same hash again is no change.
    expect((await store.writeThings([item("s1"), item("s1", { secretHash: "hash-1" })])).map(changeOf)).toEqual([
      "unchanged",
      "unchanged",
    ]);
    await store.upgradeSecretHash("s1", "not-it", "hash-x");
    expect(await store.secretHash("s1")).toBe("hash-1");
    await store.upgradeSecretHash("s1", "hash-1", "hash-2");
    expect(await store.secretHash("s1")).toBe("hash-2");
  });

  it("remembers the provisioning file's digest, and forgets it when another hand changes the thing", async () => {
    await store.writeThings([item("p1", { digest: "d1" }), item("p2", { digest: "d2" })]);
    expect(await store.provisionDigests(["p1", "p2", "p3"])).toEqual(
      new Map([
        ["p1", "d1"],
        ["p2", "d2"],
      ]),
    );
    await store.writeThings([item("p1", { label: "by hand" }), item("p2")]);
    expect(await store.provisionDigests(["p1", "p2"])).toEqual(new Map([["p2", "d2"]]));
  });

  it("deletes a thing type only once no thing is of it", async () => {
    await store.putThingType({ id: "doomed", label: "D", domain: "acme", resources: [] });
    await store.writeThings([{ ...item("d1"), input: { thingName: "d1", thingType: "doomed", domain: "acme" } }]);
    expect(await store.deleteThingType("doomed")).toBe(1);
    expect(await store.readThingType("doomed")).toBeDefined();
    await store.deleteThing("d1");
    expect(await store.deleteThingType("doomed")).toBe(0);
    expect(await store.readThingType("doomed")).toBeUndefined();
  });

  it("keeps groups and their members; ids and names share one namespace", async () => {
    await store.writeThings([item("g-b"), item("g-a"), item("g-c")]);
    const group = await store.putGroup({ id: "grp", name: "Group", domain: "acme" });
    expect(group).toMatchObject({ id: "grp", name: "Group", things: [] });
    expect(await store.groupClash("other", "Group")).toMatchObject({ id: "grp" });
    expect(await store.groupClash("Group", "x")).toMatchObject({ id: "grp" });
    expect(await store.groupClash("grp", "Group")).toBeUndefined();
    expect(await store.addMembers("grp", ["g-c", "g-a", "g-c"])).toEqual(["g-c", "g-a"]);
    expect(await store.addMembers("grp", ["g-a", "g-b"])).toEqual(["g-b"]);
    expect((await store.readGroup("grp"))!.things).toEqual(["g-a", "g-b", "g-c"]);
    expect(await store.removeMembers("grp", ["g-b", "g-x"])).toEqual(["g-b"]);
    await store.deleteThing("g-c");
    expect((await store.readGroup("grp"))!.things).toEqual(["g-a"]);
    const renamed = await store.putGroup({ id: "grp", name: "Renamed", domain: "east" });
    expect(renamed).toMatchObject({ name: "Renamed", domain: "east", things: ["g-a"], createdAt: group.createdAt });
    await store.deleteGroup("grp");
    expect(await store.readGroup("grp")).toBeUndefined();
  });

  it("loads everything in byte order for the view, which follows another process's changes", async () => {
    const fresh = await backend.open();
    const domainExists = (id: string): boolean => ["acme", "east"].includes(id);
    // Two processes on one database: what one writes, the other's relay delivers as remote.
    const here = new EventBus();
    const there = new EventBus();
    for (const [from, to] of [
      [here, there],
      [there, here],
    ] as const) {
      from.relayTo((name, event) => to.deliverRemote(name, event));
    }
    const writer = await ThingRegistry.open(fresh, here, domainExists);
    await writer.putThingType(sensor, "create");
    await writer.putThings(
      ["b", "B", "a", "_"].map((thingName) => ({ thingName, thingType: "sensor", domain: "acme" })),
      { mode: "create" },
    );
    await writer.putGroup({ id: "g1", name: "One", domain: "acme", things: ["a", "b"] }, "create");
    const snapshot = await fresh.loadAll();
    expect(snapshot.things.map((t) => t.thingName)).toEqual(["B", "_", "a", "b"]);
    expect(snapshot.groups).toMatchObject([{ id: "g1", things: ["a", "b"] }]);

    const reader = await ThingRegistry.open(fresh, there, domainExists);
    try {
      expect(reader.things().map((t) => t.thingName)).toEqual(["B", "_", "a", "b"]);
      expect(reader.group("One")).toMatchObject({ id: "g1", things: ["a", "b"] });
      expect(reader.groupsOf("a")).toEqual(["g1"]);

      await writer.putThing({ thingName: "c", thingType: "sensor", domain: "east", serial: "SER-C" }, "create");
      await writer.putGroup({ id: "g1", name: "Uno", domain: "acme" }, "update");
      await writer.removeMembers("g1", ["b"]);
      await writer.deleteThing("a");
      await expect.poll(() => reader.thingBySerial("SER-C")?.domain).toBe("east");
      await expect.poll(() => reader.group("Uno")?.things).toEqual([]);
      expect(reader.thing("a")).toBeUndefined();
      expect(reader.group("One")).toBeUndefined();
    } finally {
      reader.close();
      writer.close();
    }
  });
});
