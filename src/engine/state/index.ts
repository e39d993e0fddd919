export { isLive, type StateStore, type ThingState, type ThresholdState } from "./store.js";
export { MemoryStateStore } from "./memory.js";
export { SqliteStateStore, stateMigrations } from "./sqlite.js";
export { PgStateStore, statePgMigrations } from "./pg.js";
