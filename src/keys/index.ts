export { KEY_NAMES, type KeyName, type KeyStore } from "./store.js";
export { FileKeyStore, MemoryKeyStore } from "./file-store.js";
export { PgKeyStore, keysPgMigrations } from "./pg-store.js";
