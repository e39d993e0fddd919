import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/index.js";
import { openStores, type SeamStores } from "../../src/stores.js";
import { createPgDatabase, type PgDatabase } from "../support/postgres.js";

const dirs: string[] = [];
const databases: PgDatabase[] = [];
afterAll(async () => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  await Promise.all(databases.map((d) => d.drop()));
});

/** The class each seam's store is made of, by seam. */
function classes(stores: SeamStores): Record<string, string> {
  const { observations, ...seams } = stores;
  const named: Record<string, unknown> = { ...seams, observations: observations.store, reader: observations.reader };
  return Object.fromEntries(Object.entries(named).map(([seam, store]) => [seam, String(store?.constructor.name)]));
}

describe("the store backend chosen once, by configuration", () => {
  it("without DMS_DATABASE_URL every seam is on SQLite", async () => {
    const stores = await openStores({
      config: loadConfig({ DMS_DATA_DIR: ":memory:" }),
      engine: true,
      clock: Date.now,
    });
    try {
      expect(stores.backend).toBe("sqlite");
      expect(stores.sqlite).toBeDefined();
      expect(stores.state).toBeDefined();
      await stores.ping();
    } finally {
      await stores.close();
    }
  });

  it("with DMS_DATABASE_URL every seam is on PostgreSQL and nothing is written to the data directory", async () => {
    const database = await createPgDatabase([]);
    databases.push(database);
    const dataDir = mkdtempSync(join(tmpdir(), "dms-pg-stores-"));
    dirs.push(dataDir);
    const stores = await openStores({
      config: loadConfig({ DMS_DATA_DIR: dataDir, DMS_DATABASE_URL: database.url }),
      engine: true,
      clock: Date.now,
    });
    try {
      expect(stores.backend).toBe("postgres");
      expect(stores.sqlite).toBeUndefined();
      const { identity, things, rules, jobs, outbox, events, deadLetters, busEvents, files, exports, exportFiles } =
        stores;
      const seams = {
        identity,
        things,
        rules,
        jobs,
        outbox,
        events,
        deadLetters,
        busEvents,
        files,
        exports,
        exportFiles,
      };
      const { state, observations, keys, locks } = stores;
      const made = classes({ ...seams, state, observations, keys, locks });
      expect(Object.keys(made)).toHaveLength(16);
      for (const [seam, name] of Object.entries(made)) expect(name, seam).toMatch(/^Pg/);
      await stores.ping();
      await stores.keys.key("jwt-secret");
    } finally {
      await stores.close();
    }
    expect(readdirSync(dataDir)).toEqual([]);
  });

  it("a database that cannot be reached stops the start with its error, never falling back to SQLite", async () => {
    const unreachable = "postgres://postgres@127.0.0.1:1/dms";
    await expect(
      openStores({
        config: loadConfig({ DMS_DATA_DIR: ":memory:", DMS_DATABASE_URL: unreachable }),
        engine: false,
        clock: Date.now,
      }),
    ).rejects.toThrow(/ECONNREFUSED/);
  });
});
