export { EventBus, type BusEvents, type BusEventName, type Follower } from "./bus.js";
export { BusRelay, type BusRelayOptions } from "./relay.js";
export type { BusEventStore, StoredBusEvent } from "./store.js";
export { SqliteBusEventStore } from "./sqlite-store.js";
export { PgBusEventStore } from "./pg-store.js";
export { pollingWakeup, type RelayWakeup } from "./wakeup.js";
export { PgNotifyWakeup, BUS_CHANNEL, type PgNotifyWakeupOptions } from "./pg-wakeup.js";
export { busMigrations, busPgMigrations } from "./migrations.js";
