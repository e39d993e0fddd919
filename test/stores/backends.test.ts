import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/index.js";
import { startDms } from "../../src/service.js";
import { openStores, seamsNotOnPostgres, StoresError } from "../../src/stores.js";

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

  it("with DMS_DATABASE_URL start-up stops naming the seams not on PostgreSQL yet, never falling back to SQLite", async () => {
    const missing = seamsNotOnPostgres();
    // Rules have their PostgreSQL store: never listed.
    expect(missing).not.toContain("rules");
    if (missing.length === 0) return;
    const config = loadConfig({
      DMS_DATA_DIR: ":memory:",
      DMS_DATABASE_URL: "postgres://postgres@127.0.0.1:5432/postgres",
      DMS_HTTP_PORT: "0",
      DMS_LOG_LEVEL: "silent",
    });
    const started = startDms(config);
    await expect(started).rejects.toBeInstanceOf(StoresError);
    await expect(started).rejects.toThrow(`no PostgreSQL implementation yet: ${missing.join(", ")}`);
  });
});
