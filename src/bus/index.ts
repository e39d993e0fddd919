export { EventBus, type BusEvents, type BusEventName, type Follower } from "./bus.js";
export { BusRelay, type BusRelayOptions } from "./relay.js";
export type { BusEventStore, StoredBusEvent } from "./store.js";
export { SqliteBusEventStore } from "./sqlite-store.js";
export { busMigrations } from "./migrations.js";
