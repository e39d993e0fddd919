import { authMigrations } from "./auth/index.js";
import { jobsMigrations } from "./jobs/index.js";
import type { Migration } from "./store/index.js";
import { thingsMigrations } from "./things/index.js";

/** Every capability's schema changes, in the order they apply. */
export const migrations: readonly Migration[] = [...authMigrations, ...thingsMigrations, ...jobsMigrations];
