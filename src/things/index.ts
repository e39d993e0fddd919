export {
  ThingRegistry,
  DATA_TYPES,
  RESOURCE_TYPES,
  type DataType,
  type ResourceType,
  type ResourceDefinition,
  type ThingType,
  type Thing,
  type ThingGroup,
  type NewThing,
} from "./registry.js";
export { thingsMigrations } from "./migrations.js";
