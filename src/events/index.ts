export { SqliteEventStore } from "./sqlite-store.js";
export { PgEventStore } from "./pg-store.js";
export {
  CLASSIFICATIONS,
  type EventStore,
  type Classification,
  type EventRecord,
  type NewEvent,
  type EventQuery,
} from "./store.js";
export { kafkaPublisher, noPublisher, type EventPublisher } from "./kafka.js";
export { eventsMigrations, eventsPgMigrations } from "./migrations.js";
