/**
 * Set up in the `rest-postgres` project (vitest.config.ts): every deployment a test starts keeps its
 * stores on a PostgreSQL database of its own, dropped once the test file is done.
 */
import { afterAll } from "vitest";
import { createPgDatabase, type PgDatabase } from "./postgres.js";
import { provideTestDatabases } from "./test-database.js";

const databases = new Map<string, Promise<PgDatabase>>();

provideTestDatabases(async (dataDir) => {
  let database = databases.get(dataDir);
  if (!database) databases.set(dataDir, (database = createPgDatabase([])));
  return (await database).url;
});

afterAll(async () => {
  const all = await Promise.all(databases.values());
  databases.clear();
  await Promise.all(all.map((d) => d.drop()));
});
