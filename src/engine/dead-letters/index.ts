export {
  DEAD_LETTER_REASONS,
  MAX_DEAD_LETTER_PAYLOAD,
  type DeadLetter,
  type DeadLetterReason,
  type DeadLetterStore,
  type StoredDeadLetter,
} from "./store.js";
export { SqliteDeadLetterStore } from "./sqlite-store.js";
export { PgDeadLetterStore } from "./pg-store.js";
export { deadLetterMigrations, deadLetterPgMigrations } from "./migrations.js";
