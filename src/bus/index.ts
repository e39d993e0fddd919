export { EventBus, type BusEvents, type BusEventName, type Follower } from "./bus.js";
export { BusRelay, busMigrations, type BusRelayOptions } from "./relay.js";
