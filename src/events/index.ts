export {
  EventStore,
  CLASSIFICATIONS,
  type Classification,
  type EventRecord,
  type NewEvent,
  type EventQuery,
} from "./store.js";
export { kafkaPublisher, noPublisher, type EventPublisher } from "./kafka.js";
export { eventsMigrations } from "./migrations.js";
