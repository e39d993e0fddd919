import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Identity, SqliteIdentityStore } from "../../src/auth/index.js";
import { EventBus } from "../../src/bus/index.js";
import { ApiError } from "../../src/errors/index.js";
import { migrations } from "../../src/migrations.js";
import {
  PgRuleStore,
  RuleCache,
  SqliteRuleStore,
  rulesPgMigrations,
  type Rule,
  type RuleStore,
} from "../../src/rules/index.js";
import { openDatabase, type Db } from "../../src/store/index.js";
import { createPgDatabase, type PgDatabase } from "../support/postgres.js";
import { ruleBody } from "./fixtures.js";

/**
 * One contract, every implementation of the rule store seam: what the rules
 * service and the engine rely on must hold whichever database is behind it.
 */
interface Backend {
  name: string;
  /** A store over an empty database of its own, with `prefix` for generated ids. */
  open(prefix: string): Promise<RuleStore>;
  close(): Promise<void>;
}

function sqliteBackend(): Backend {
  const dbs: Db[] = [];
  return {
    name: "SQLite",
    async open(prefix) {
      const db = openDatabase({ dataDir: ":memory:", migrations });
      dbs.push(db);
      // Rules name their domain (a foreign key in SQLite): the tree the cases use.
      const identity = await Identity.open(new SqliteIdentityStore(db), new EventBus());
      await identity.createDomain("acme", "root");
      return new SqliteRuleStore(db, prefix);
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
    async open(prefix) {
      const database = await createPgDatabase(rulesPgMigrations);
      databases.push(database);
      return new PgRuleStore(database.pool, prefix);
    },
    async close() {
      await Promise.all(databases.map((d) => d.drop()));
    },
  };
}

/** The REST fixture's rule body, stored under `id`. */
function rule(id: string, over: Partial<Rule> = {}): Rule {
  return { ...(ruleBody({ name: `rule ${id}` }) as Omit<Rule, "id">), id, ...over };
}

describe.each([sqliteBackend(), pgBackend()])("rule store contract: $name", (backend) => {
  let store: RuleStore;
  beforeAll(async () => {
    store = await backend.open("test-");
  });
  afterAll(() => backend.close());

  it("reads back what it took, with its keys in the order written", async () => {
    const written = rule("contract-a", {
      description: "described",
      category: "heat",
      filter: { domain: "acme", thingType: "10", thingNames: ["t1", "t2"] },
    });
    await store.insert(written);
    const read = await store.get("contract-a");
    expect(read).toEqual(written);
    expect(JSON.stringify(read)).toBe(JSON.stringify(written));
    expect(await store.get("contract-missing")).toBeUndefined();
  });

  it("refuses a taken id with RULE_ID_EXISTS on property id, leaving the first rule", async () => {
    await store.insert(rule("contract-dup", { name: "first" }));
    const err = await store.insert(rule("contract-dup", { name: "second" })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ key: "RULE_ID_EXISTS", property: "id" });
    expect((await store.get("contract-dup"))?.name).toBe("first");
  });

  it("lists every rule by id in byte order", async () => {
    for (const id of ["order-b", "order-B", "order-a", "order-_"]) await store.insert(rule(id));
    const ids = (await store.all()).map((r) => r.id).filter((id) => id.startsWith("order-"));
    expect(ids).toEqual(["order-B", "order-_", "order-a", "order-b"]);
  });

  it("replaces a rule's document and leaves an absent rule absent", async () => {
    await store.insert(rule("contract-r"));
    const changed = rule("contract-r", { enabled: false, threshold: { count: 3, interval: 60 } });
    await store.replace(changed);
    expect(await store.get("contract-r")).toEqual(changed);
    await store.replace(rule("contract-never"));
    expect(await store.get("contract-never")).toBeUndefined();
  });

  it("removes a rule; removing it again changes nothing", async () => {
    await store.insert(rule("contract-x"));
    await store.remove("contract-x");
    expect(await store.get("contract-x")).toBeUndefined();
    await store.remove("contract-x");
    expect((await store.all()).some((r) => r.id === "contract-x")).toBe(false);
  });

  it("generates padded ids in sequence, skipping those an explicit CREATE took", async () => {
    const fresh = await backend.open("gen-");
    expect(await fresh.nextId()).toBe("gen-00000001");
    await fresh.insert(rule("gen-00000002"));
    await fresh.insert(rule("gen-00000003"));
    expect(await fresh.nextId()).toBe("gen-00000004");
  });

  it("hands out distinct ids to callers at the same time", async () => {
    const ids = await Promise.all(Array.from({ length: 20 }, () => store.nextId()));
    expect(new Set(ids).size).toBe(20);
  });

  it("feeds a RuleCache that follows the bus from then on", async () => {
    const fresh = await backend.open("cache-");
    await fresh.insert(rule("cache-1"));
    await fresh.insert(rule("cache-2"));
    const bus = new EventBus();
    const cache = await RuleCache.open(fresh, bus);
    try {
      expect(cache.all().map((r) => r.id)).toEqual(["cache-1", "cache-2"]);
      bus.emit("rule.changed", { id: "cache-0", rule: rule("cache-0") });
      bus.emit("rule.changed", { id: "cache-2", rule: null });
      expect(cache.all().map((r) => r.id)).toEqual(["cache-0", "cache-1"]);
    } finally {
      cache.close();
    }
    // A change announced while the store is read is newer than what the read returns.
    const racing: RuleStore = {
      ...fresh,
      nextId: () => fresh.nextId(),
      all: async () => {
        const stored = await fresh.all();
        bus.emit("rule.changed", { id: "cache-1", rule: null });
        return stored;
      },
    };
    const raced = await RuleCache.open(racing, bus);
    expect(raced.all().map((r) => r.id)).toEqual(["cache-2"]);
    raced.close();
  });
});
