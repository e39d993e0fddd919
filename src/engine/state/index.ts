export type { StateStore, ThingState, ThresholdState } from "./store.js";
export { MemoryStateStore } from "./memory.js";
export { SqliteStateStore, stateMigrations } from "./sqlite.js";
