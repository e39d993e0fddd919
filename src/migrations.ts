import { actionsMigrations } from "./actions/index.js";
import { authMigrations } from "./auth/index.js";
import { busMigrations } from "./bus/index.js";
import { filesMigrations } from "./files/index.js";
import { eventsMigrations } from "./events/index.js";
import { engineMigrations } from "./engine/index.js";
import { rulesMigrations } from "./rules/index.js";
import { exportMigrations } from "./observations/index.js";
import { jobsMigrations } from "./jobs/index.js";
import type { Migration } from "./store/index.js";
import { thingsMigrations } from "./things/index.js";

/**
 * Every capability's schema changes to the service's database, in the order they apply. The
 * observations have a file of their own, migrated by `openObservations`.
 */
export const migrations: readonly Migration[] = [
  ...authMigrations,
  ...thingsMigrations,
  ...filesMigrations,
  ...rulesMigrations,
  ...actionsMigrations,
  ...eventsMigrations,
  ...engineMigrations,
  ...exportMigrations,
  ...jobsMigrations,
  ...busMigrations,
];
