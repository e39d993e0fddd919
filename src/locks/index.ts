export type { LockStore } from "./store.js";
export { PgLockStore } from "./pg-store.js";
export { FileLockStore } from "./file-store.js";
export { MemoryLockStore } from "./memory-store.js";
