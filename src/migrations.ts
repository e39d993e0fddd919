import { actionsMigrations } from "./actions/index.js";
import { authMigrations } from "./auth/index.js";
import { busMigrations } from "./bus/index.js";
import { filesMigrations } from "./files/index.js";
import { eventsMigrations } from "./events/index.js";
import { engineMigrations } from "./engine/index.js";
import { rulesMigrations } from "./rules/index.js";
import { exportMigrations, observationMigrations } from "./observations/index.js";
import { jobsMigrations } from "./jobs/index.js";
import type { Migration } from "./store/index.js";
import { thingsMigrations } from "./things/index.js";

/** Every capability's schema changes, in the order they apply. */
export const migrations: readonly Migration[] = [
  ...authMigrations,
  ...thingsMigrations,
  ...observationMigrations,
  ...filesMigrations,
  ...rulesMigrations,
  ...actionsMigrations,
  ...eventsMigrations,
  ...engineMigrations,
  ...exportMigrations,
  ...jobsMigrations,
  ...busMigrations,
];
