import { defineConfig } from "vitest/config";
import { restSuite, tiers } from "./test/tiers.js";

// Two tiers (test/tiers.ts): `fast` needs nothing outside the test's process, `slow` needs a broker,
// OpenSearch, PostgreSQL or a child process. `npm test` runs both, `npm run test:fast` the first; and
// `rest-postgres` runs the REST-level tests again with every store on PostgreSQL.
const { fast, slow } = tiers(import.meta.dirname);
const rest = restSuite(import.meta.dirname);

export default defineConfig({
  test: {
    globalSetup: ["test/global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    pool: "forks",
    projects: [
      { extends: true, test: { name: "fast", include: fast, setupFiles: ["test/support/fast-guard.ts"] } },
      { extends: true, test: { name: "slow", include: slow } },
      {
        extends: true,
        test: { name: "rest-postgres", include: rest, setupFiles: ["test/support/postgres-backend.ts"] },
      },
    ],
  },
});
