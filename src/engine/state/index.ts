export { MemoryStateStore } from "./memory.js";
export { SqliteStateStore, stateMigrations } from "./sqlite.js";
