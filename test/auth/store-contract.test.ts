import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  PgIdentityStore,
  ROOT_DOMAIN,
  SqliteIdentityStore,
  authMigrations,
  identityPgMigrations,
  type IdentityStore,
  type UserRecord,
} from "../../src/auth/index.js";
import { rulesMigrations, rulesPgMigrations } from "../../src/rules/index.js";
import { thingsMigrations, thingsPgMigrations } from "../../src/things/index.js";
import { storeBackends } from "../support/backends.js";
import { refusal } from "../support/parts.js";

/**
 * One contract, both implementations of the identity store seam: what `Identity` and the tokens
 * rely on. The things' and rules' tables are there too, as in the service: a domain that holds
 * any of them is not deleted.
 */
const backends = storeBackends<IdentityStore>({
  sqlite: {
    migrations: [...authMigrations, ...thingsMigrations, ...rulesMigrations],
    store: (db) => new SqliteIdentityStore(db),
  },
  pg: {
    migrations: [...identityPgMigrations, ...thingsPgMigrations, ...rulesPgMigrations],
    store: (pool) => new PgIdentityStore(pool),
  },
});

const user = (userName: string, over: Partial<UserRecord> = {}): UserRecord => ({
  userName,
  passwordHash: `hash-of-${userName}`,
  role: "ReadWrite",
  homeDomain: "acme",
  email: null,
  privileges: {},
  ...over,
});

describe.each(backends)("identity store contract: $name", (backend) => {
  let store: IdentityStore;
  beforeAll(async () => {
    store = await backend.open();
    await store.insertDomain({ id: "acme", parent: ROOT_DOMAIN, label: "Acme", path: "root/acme" });
    await store.insertDomain({ id: "east", parent: "acme", label: "East", path: "root/acme/east" });
  });
  afterAll(() => backend.close());

  it("holds the root domain from its creation, and the domains added under it", async () => {
    const domains = (await store.domains()).sort((a, b) => a.path.localeCompare(b.path));
    expect(domains.map((d) => [d.id, d.parent, d.path])).toEqual([
      ["root", null, "root"],
      ["acme", "root", "root/acme"],
      ["east", "acme", "root/acme/east"],
    ]);
    expect(Date.parse(domains[1]!.createdAt)).toBeGreaterThan(0);
    await store.updateDomainLabel("east", "East coast");
    expect((await store.domains()).find((d) => d.id === "east")?.label).toBe("East coast");
  });

  it("stores a user once, with its privileges sorted, and changes only what an update names", async () => {
    await store.insertUser(user("alice", { privileges: { east: ["Things.READ", "Rules.READ"], acme: ["*.*"] } }));
    expect(await refusal(() => store.insertUser(user("alice")))).toBe("ALREADY_EXISTS");
    expect(await store.user("alice")).toMatchObject({
      userName: "alice",
      role: "ReadWrite",
      homeDomain: "acme",
      email: null,
      privileges: { acme: ["*.*"], east: ["Rules.READ", "Things.READ"] },
    });
    expect(await store.passwordHash("alice")).toBe("hash-of-alice");

    await store.updateUser("alice", {
      role: "Read",
      homeDomain: "east",
      email: "a@example.com",
      passwordHash: undefined,
      privileges: undefined,
    });
    const changed = await store.user("alice");
    expect(changed).toMatchObject({ role: "Read", homeDomain: "east", email: "a@example.com" });
    expect(changed?.privileges).toEqual({ acme: ["*.*"], east: ["Rules.READ", "Things.READ"] });
    expect(await store.passwordHash("alice")).toBe("hash-of-alice");

    await store.updateUser("alice", { ...changed!, passwordHash: "new-hash", privileges: { east: ["Files.READ"] } });
    expect((await store.user("alice"))?.privileges).toEqual({ east: ["Files.READ"] });
    expect(await store.passwordHash("alice")).toBe("new-hash");
  });

  it("lists users by name, answers undefined for an unknown one, and deletes once", async () => {
    await store.insertUser(user("Bob"));
    await store.insertUser(user("carol"));
    expect((await store.users()).map((u) => u.userName)).toEqual(["Bob", "alice", "carol"]);
    expect(await store.user("ghost")).toBeUndefined();
    expect(await store.passwordHash("ghost")).toBeUndefined();
    expect(await store.deleteUser("carol")).toBe(true);
    expect(await store.deleteUser("carol")).toBe(false);
  });

  it("refuses to delete a domain a user lives in; privileges on a deleted domain go with it", async () => {
    expect(await refusal(() => store.deleteDomain("east"))).toBe("INVALID_ARGUMENTS");
    await store.insertDomain({ id: "west", parent: "acme", label: "West", path: "root/acme/west" });
    await store.insertUser(user("dave", { privileges: { west: ["Things.READ"], acme: ["Things.READ"] } }));
    await store.deleteDomain("west");
    expect((await store.domains()).some((d) => d.id === "west")).toBe(false);
    expect((await store.user("dave"))?.privileges).toEqual({ acme: ["Things.READ"] });
  });

  it("adds an API key once by its hash, marks one public key at a time, and deletes by id", async () => {
    const first = await store.addApiKey("h1", "first", undefined);
    expect(await store.addApiKey("h1", "again", undefined)).toEqual(first);
    await store.addApiKey("h2", "public", "key-two");
    expect(await store.publicApiKey()).toBe("key-two");
    await store.addApiKey("h3", "other public", "key-three");
    expect(await store.publicApiKey()).toBe("key-three");
    expect((await store.apiKeyHashes()).sort()).toEqual(["h1", "h2", "h3"]);
    expect((await store.apiKeys()).map((k) => k.label).sort()).toEqual(["first", "other public", "public"]);
    expect(await store.deleteApiKey(first.id)).toBe(true);
    expect(await store.deleteApiKey(first.id)).toBe(false);
    expect((await store.apiKeyHashes()).sort()).toEqual(["h2", "h3"]);
  });

  it("redeems a refresh token once; presented again it revokes its family; expired or someone else's: nothing", async () => {
    const now = 1_000_000;
    await store.issueRefresh("j1", "f1", "alice", now + 60_000, now);
    await store.issueRefresh("j2", "f1", "alice", now + 60_000, now);
    await store.issueRefresh("j3", "f2", "alice", now + 10, now);
    expect(await store.redeemRefresh("j1", "Bob", now)).toBeUndefined();
    expect(await store.redeemRefresh("j1", "alice", now)).toEqual({ userName: "alice", family: "f1" });
    expect(await store.redeemRefresh("j1", "alice", now)).toBeUndefined();
    // The reuse revoked j2, of the same family.
    expect(await store.redeemRefresh("j2", "alice", now)).toBeUndefined();
    expect(await store.redeemRefresh("j3", "alice", now + 10)).toBeUndefined();
    expect(await store.redeemRefresh("unknown", "alice", now)).toBeUndefined();
  });

  it("two processes redeeming one token at once: exactly one gets it", async () => {
    const [a, b] = await backend.openPair();
    const now = 2_000_000;
    for (let i = 0; i < 20; i++) await a.issueRefresh(`race-${i}`, `family-${i}`, "root-user", now + 60_000, now);
    const grants = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        Promise.all([a.redeemRefresh(`race-${i}`, "root-user", now), b.redeemRefresh(`race-${i}`, "root-user", now)]),
      ),
    );
    for (const pair of grants) expect(pair.filter((g) => g !== undefined)).toHaveLength(1);
  });
});
