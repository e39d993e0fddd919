export { ThingRegistry } from "./registry.js";
export { createThings, type ThingsCapability, type ThingsCapabilityDeps } from "./create.js";
export {
  DATA_TYPES,
  RESOURCE_TYPES,
  type DataType,
  type ResourceType,
  type ResourceDefinition,
  type ThingType,
  type Thing,
  type ThingGroup,
  type GroupHeader,
  type NewThing,
  type ThingWrite,
  type ThingOutcome,
  type WriteMode,
  type PutThingsOptions,
} from "./types.js";
export type {
  ThingStore,
  ThingLookups,
  ThingSnapshot,
  StoredThing,
  ThingWriteItem,
  ThingWriteResult,
} from "./store.js";
export { SqliteThingStore } from "./sqlite-store.js";
export { PgThingStore } from "./pg-store.js";
export {
  DeviceCredentials,
  CredentialsBusyError,
  registerCredentialMetrics,
  generateDeviceSecret,
  isGeneratedSecret,
  isDeviceSecretHash,
  hashChosenSecret,
  MIN_CHOSEN_SECRET_LENGTH,
  GENERATED_PREFIX,
  type CredentialWork,
} from "./credentials.js";
export { thingsMigrations, thingsPgMigrations } from "./migrations.js";
export { ThingGroupsService, type ThingGroupsDeps, type NewThingGroup } from "./groups-service.js";
export {
  ThingTypesService,
  ThingsService,
  type ThingsDeps,
  type NewThingType,
  type ThingTypeChange,
  type ThingChange,
  type WrittenThing,
} from "./things-service.js";
