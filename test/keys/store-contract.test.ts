import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { FileKeyStore, PgKeyStore, keysPgMigrations, type KeyStore } from "../../src/keys/index.js";
import { openPgPool, type PgPool } from "../../src/store/index.js";
import { createPgDatabase, type PgDatabase } from "../support/postgres.js";

/** The two stores processes share keys through: files in one data directory, or one PostgreSQL database. */
const dirs: string[] = [];
const databases: PgDatabase[] = [];
const pools: PgPool[] = [];
afterAll(async () => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  await Promise.all(pools.map((p) => p.end()));
  await Promise.all(databases.map((d) => d.drop()));
});

const backends: { name: string; pair(): Promise<[KeyStore, KeyStore]> }[] = [
  {
    name: "files",
    async pair() {
      const dir = mkdtempSync(join(tmpdir(), "dms-keys-"));
      dirs.push(dir);
      return [new FileKeyStore(dir), new FileKeyStore(dir)];
    },
  },
  {
    name: "PostgreSQL",
    async pair() {
      const database = await createPgDatabase(keysPgMigrations);
      databases.push(database);
      const second = openPgPool(database.url);
      pools.push(second);
      return [new PgKeyStore(database.pool), new PgKeyStore(second)];
    },
  },
];

describe.each(backends)("key store contract: $name", (backend) => {
  it("generates each key once: every process, asking at once or later, reads the same 32 random bytes", async () => {
    const [a, b] = await backend.pair();
    const [first, racing] = await Promise.all([a.key("jwt-secret"), b.key("jwt-secret")]);
    expect(racing).toBe(first);
    expect(Buffer.from(first, "base64url")).toHaveLength(32);
    expect(await b.key("jwt-secret")).toBe(first);
    const others = await Promise.all([a.key("signing-key"), b.key("device-secret-key")]);
    expect(new Set([first, ...others]).size).toBe(3);
  });
});

describe("FileKeyStore", () => {
  it("keeps a key readable by its owner only", async () => {
    const dir = mkdtempSync(join(tmpdir(), "dms-keys-"));
    dirs.push(dir);
    await new FileKeyStore(dir).key("signing-key");
    expect(statSync(join(dir, "signing-key")).mode & 0o777).toBe(0o600);
  });
});
