import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openPgPool, type PgPool } from "../../src/store/index.js";
import {
  PgThingStore,
  thingsPgMigrations,
  type ThingWriteItem,
  type ThingWriteResult,
} from "../../src/things/index.js";
import { createPgDatabase, type PgDatabase } from "../support/postgres.js";

/**
 * What the PostgreSQL thing store adds to the contract (store-contract.test.ts): a bulk is written
 * with a few statements whatever its size, and a thing or serial another process writes meanwhile
 * is answered as if that process had written before the bulk.
 */
function item(thingName: string, over: Partial<ThingWriteItem> & { serial?: string } = {}): ThingWriteItem {
  const { serial, ...rest } = over;
  return {
    input: { thingName, thingType: "sensor", domain: "acme", serial },
    mode: "upsert",
    secretHash: null,
    ...rest,
  };
}

const changeOf = (r: ThingWriteResult): string => ("error" in r ? r.error.key : r.change);

describe("PgThingStore bulk writes", () => {
  let database: PgDatabase;
  /** The store's own pool, every connection of which counts its statements. */
  let pool: PgPool;
  let store: PgThingStore;
  /** Statements sent on the pool's connections since the last reset. */
  let statements = 0;

  beforeAll(async () => {
    database = await createPgDatabase(thingsPgMigrations);
    pool = openPgPool(database.url);
    pool.on("connect", (client: pg.PoolClient) => {
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      (client as { query: unknown }).query = (...args: unknown[]) => {
        statements++;
        return query(...args);
      };
    });
    store = new PgThingStore(pool);
    await store.putThingType({ id: "sensor", label: "Sensor", domain: "acme", resources: [] });
  });
  afterAll(async () => {
    await pool.end();
    await database.drop();
  });

  /** Runs `sql` in a transaction of another connection, kept open until `commit` is called. */
  async function otherProcess(sql: string, values: unknown[]): Promise<{ commit(): Promise<void> }> {
    const client = await database.pool.connect();
    await client.query("BEGIN");
    await client.query(sql, values);
    return {
      async commit() {
        await client.query("COMMIT");
        client.release();
      },
    };
  }

  /** Connections of this database waiting for a lock: the bulk waits for the other transaction. */
  async function waiting(): Promise<number> {
    const { rows } = await database.pool.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
    );
    return rows[0]!.n;
  }

  it("writes a bulk of 500 new, changed and unchanged things with a few statements", async () => {
    const names = Array.from({ length: 500 }, (_, i) => `n${i}`);
    statements = 0;
    const created = await store.writeThings(names.map((n, i) => item(n, { serial: `N-${i}`, digest: `d${i}` })));
    expect(new Set(created.map(changeOf))).toEqual(new Set(["created"]));
    expect(statements).toBeLessThanOrEqual(12);

    statements = 0;
    const mixed = await store.writeThings(
      names.map((n, i) =>
        i % 2 === 0 ? item(n, { serial: `N-${i}`, digest: `d${i}` }) : item(n, { serial: `M-${i}` }),
      ),
    );
    expect(mixed.map(changeOf).slice(0, 4)).toEqual(["unchanged", "updated", "unchanged", "updated"]);
    expect(statements).toBeLessThanOrEqual(12);
    const digests = await store.provisionDigests(names);
    expect(digests.size).toBe(250);
    expect(digests.get("n0")).toBe("d0");
    expect(digests.has("n1")).toBe(false);
  });

  it("decides a bulk again when another process created one of its things meanwhile: a create is refused", async () => {
    const other = await otherProcess(
      `INSERT INTO things (thing_name, thing_type, domain, created_at, updated_at)
       VALUES ('race-1', 'sensor', 'acme', now(), now()), ('race-3', 'sensor', 'acme', now(), now())`,
      [],
    );
    const written = store.writeThings([
      item("race-0", { mode: "create" }),
      item("race-1", { mode: "create" }),
      item("race-2", { mode: "create" }),
      item("race-3", { serial: "RACE-3" }),
    ]);
    await expect.poll(waiting).toBeGreaterThan(0);
    await other.commit();
    expect((await written).map(changeOf)).toEqual(["created", "ALREADY_EXISTS", "created", "updated"]);
    const stored = await store.storedThings(["race-0", "race-1", "race-2", "race-3"]);
    expect(stored.size).toBe(4);
    expect(stored.get("race-3")!.thing.serial).toBe("RACE-3");
  });

  it("refuses only the item whose serial another process took meanwhile", async () => {
    const other = await otherProcess(
      `INSERT INTO things (thing_name, thing_type, domain, serial, created_at, updated_at)
       VALUES ('holder', 'sensor', 'acme', 'R-1', now(), now())`,
      [],
    );
    const written = store.writeThings([item("r1", { serial: "R-1" }), item("r2", { serial: "R-2" })]);
    await expect.poll(waiting).toBeGreaterThan(0);
    await other.commit();
    const results = await written;
    expect(results.map(changeOf)).toEqual(["ALREADY_EXISTS", "created"]);
    expect("error" in results[0]! && results[0].error.property).toBe("serial");
    const stored = await store.storedThings(["r1", "r2", "holder"]);
    expect([...stored.keys()].sort()).toEqual(["holder", "r2"]);
  });
});
