import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { Provision } from "../../src/provision/index.js";
import { BASE_PROVISION, startTestDms, type TestDms } from "../support/dms.js";
import { json } from "../support/http.js";
import { createPgDatabase, type PgDatabase } from "../support/postgres.js";
import { until } from "../support/wait.js";

/**
 * Every node of a cluster may start with the same provisioning file (one environment for all):
 * started at once, they must all start, and the file must end applied as if applied once.
 */
const PROVISION: Provision = {
  ...BASE_PROVISION,
  things: [
    ...BASE_PROVISION.things!,
    ...Array.from({ length: 300 }, (_, i) => ({ thingName: `p${i}`, thingType: "10", domain: "acme" })),
  ],
  thingGroups: [{ id: "g1", name: "fleet", domain: "acme", things: ["t1", "p1", "p2"] }],
};

async function applied(t: TestDms): Promise<void> {
  const { users } = (await json(await t.call("GET", "/admin/users", { user: "admin" }))) as {
    users: { userName: string }[];
  };
  expect(users.map((u) => u.userName).sort()).toEqual(PROVISION.users!.map((u) => u.userName).sort());
  const { domains } = (await json(await t.call("GET", "/admin/domains", { user: "admin" }))) as {
    domains: { id: string }[];
  };
  expect(domains.map((d) => d.id).sort()).toEqual(PROVISION.domains!.map((d) => d.id).sort());
  // What another process wrote reaches this one's registry through the bus.
  const registry = t.dms.services.registry;
  await until(() => registry.things().length === PROVISION.things!.length, 10_000, "every thing in the registry");
  expect(registry.group("g1")?.things.sort()).toEqual(["p1", "p2", "t1"]);
}

describe("the same provisioning file, applied by several processes that start at once", () => {
  const started: TestDms[] = [];
  const databases: PgDatabase[] = [];
  const dirs: string[] = [];
  afterAll(async () => {
    await Promise.all(started.map((t) => t.close()));
    await Promise.all(databases.map((d) => d.drop()));
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it("on one PostgreSQL database: three services all start, and each sees the file applied", async () => {
    const database = await createPgDatabase([]);
    databases.push(database);
    const services = await Promise.all(
      [1, 2, 3].map(() => startTestDms({ provision: PROVISION, env: { DMS_DATABASE_URL: database.url } })),
    );
    started.push(...services);
    for (const t of services) await applied(t);
  }, 120_000);

  it("on one SQLite data directory: two services both start, and each sees the file applied", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "dms-provision-twice-"));
    dirs.push(dataDir);
    const services = await Promise.all([1, 2].map(() => startTestDms({ provision: PROVISION, dataDir })));
    started.push(...services);
    for (const t of services) await applied(t);
  }, 120_000);
});
