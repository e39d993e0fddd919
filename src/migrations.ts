import { authMigrations } from "./auth/index.js";
import { filesMigrations } from "./files/index.js";
import { exportMigrations, observationMigrations } from "./observations/index.js";
import type { Migration } from "./store/index.js";
import { thingsMigrations } from "./things/index.js";

/** Every capability's schema changes, in the order they apply. */
export const migrations: readonly Migration[] = [
  ...authMigrations,
  ...thingsMigrations,
  ...observationMigrations,
  ...exportMigrations,
  ...filesMigrations,
];
