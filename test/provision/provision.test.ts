import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { Identity, SqliteIdentityStore } from "../../src/auth/index.js";
import { EventBus, type BusEventName } from "../../src/bus/index.js";
import { migrations } from "../../src/migrations.js";
import { provision, type Provision, type ProvisionTarget } from "../../src/provision/index.js";
import { openDatabase, type Db } from "../../src/store/index.js";
import { SqliteThingStore, ThingRegistry } from "../../src/things/index.js";
import { BASE_PROVISION, startTestDms, type TestDms } from "../support/dms.js";
import { json, type Payload } from "../support/http.js";

const TABLES = [
  "domains",
  "users",
  "user_privileges",
  "api_keys",
  "thing_types",
  "thing_type_resources",
  "things",
  "thing_groups",
  "thing_group_members",
];
const LISTS = [
  "/admin/domains",
  "/admin/users",
  "/admin/api-keys",
  "/admin/thing-types",
  "/admin/things",
  "/admin/thing-groups",
];

/** Every row of every identity and registry table, hashes and timestamps included. */
function dump(db: Db): Record<string, unknown[]> {
  return Object.fromEntries(TABLES.map((table) => [table, db.prepare(`SELECT * FROM ${table} ORDER BY 1, 2`).all()]));
}

async function snapshot(t: TestDms): Promise<{ lists: Record<string, Payload>; tables: Record<string, unknown[]> }> {
  const lists: Record<string, Payload> = {};
  for (const path of LISTS) lists[path] = await json(await t.call("GET", path, { user: "admin" }));
  return { lists, tables: dump(t.dms.services.db!) };
}

const EVENTS: BusEventName[] = [
  "thingGroup.membership",
  "thingGroup.deleted",
  "domain.changed",
  "thingType.changed",
  "thing.changed",
];

function recordEvents(bus: EventBus): unknown[] {
  const seen: unknown[] = [];
  for (const name of EVENTS) bus.on(name, (e) => seen.push([name, e]));
  return seen;
}

async function freshTarget(): Promise<ProvisionTarget & { bus: EventBus; db: Db }> {
  const db = openDatabase({ dataDir: ":memory:", migrations });
  const bus = new EventBus();
  const identity = await Identity.open(new SqliteIdentityStore(db), bus);
  const registry = await ThingRegistry.open(new SqliteThingStore(db), bus, (id) => identity.domain(id) !== undefined);
  return { db, bus, identity, registry };
}

describe("the provisioning file applied twice equals once", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "dms-provision-"));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it("a restart on the same data dir with the same file changes nothing", async () => {
    const first = await startTestDms({ dataDir });
    const before = await snapshot(first);
    await first.close();

    const second = await startTestDms({ dataDir });
    try {
      const after = await snapshot(second);
      expect(after).toEqual(before);
      // The snapshot is not empty, and holds hashes, never the secrets in clear.
      expect(after.lists["/admin/things"].things).toHaveLength(3);
      const users = after.tables.users as { password_hash: string }[];
      expect(users.map((u) => u.password_hash.split("$")[0])).toEqual(["scrypt", "scrypt", "scrypt", "scrypt"]);
      const things = after.tables.things as { secret_hash: string }[];
      expect(things.every((t) => t.secret_hash.startsWith("pbkdf2-sha512$"))).toBe(true);
      expect(JSON.stringify(after.tables)).not.toMatch(/admin-pw|dev-pw|test-api-key/);
    } finally {
      await second.close();
    }
    // Two service starts with scrypt-hashed users, on a shared machine.
  }, 120_000);
});

describe("provision() called twice directly", () => {
  it("the second call writes nothing and publishes nothing", async () => {
    const target = await freshTarget();
    await provision(BASE_PROVISION, target);
    const once = dump(target.db);
    const events = recordEvents(target.bus);
    await provision(BASE_PROVISION, target);
    expect(dump(target.db)).toEqual(once);
    expect(events).toEqual([]);
    target.db.close();
  });

  it("a changed document changes only what changed", async () => {
    const target = await freshTarget();
    await provision(BASE_PROVISION, target);
    const once = dump(target.db);
    const changed: Provision = {
      ...BASE_PROVISION,
      users: BASE_PROVISION.users!.map((u) => (u.userName === "alice" ? { ...u, password: "alice-new-pw" } : u)),
      things: BASE_PROVISION.things!.map((t) =>
        t.thingName === "t2" ? { ...t, secret: "t2-new-0123456789abcdef" } : t,
      ),
    };
    await provision(changed, target);
    const twice = dump(target.db);
    const byName = (rows: unknown[], key: string, name: string) =>
      (rows as Record<string, unknown>[]).find((r) => r[key] === name);
    expect(byName(twice.users!, "user_name", "alice")).not.toEqual(byName(once.users!, "user_name", "alice"));
    expect(byName(twice.users!, "user_name", "admin")).toEqual(byName(once.users!, "user_name", "admin"));
    expect(byName(twice.things!, "thing_name", "t2")).not.toEqual(byName(once.things!, "thing_name", "t2"));
    expect(byName(twice.things!, "thing_name", "t1")).toEqual(byName(once.things!, "thing_name", "t1"));
    expect(await target.identity.authenticate("alice", "alice-new-pw")).toBeDefined();
    expect(await target.registry.verifyThingSecret("t2", "t2-new-0123456789abcdef")).toBe(true);
    for (const table of ["domains", "user_privileges", "api_keys", "thing_types", "thing_groups"]) {
      expect(twice[table], table).toEqual(once[table]);
    }
    target.db.close();
  }, 120_000);
});
