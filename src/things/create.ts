import type { Registry } from "prom-client";
import type { Identity } from "../auth/index.js";
import type { EventBus } from "../bus/index.js";
import type { KeyStore } from "../keys/index.js";
import { DeviceCredentials, registerCredentialMetrics } from "./credentials.js";
import { ThingRegistry } from "./registry.js";
import { ThingGroupsService } from "./groups-service.js";
import type { ThingStore } from "./store.js";
import { ThingTypesService, ThingsService } from "./things-service.js";

export interface ThingsCapabilityDeps {
  /** Where thing types, things, groups and device credentials are kept. */
  store: ThingStore;
  bus: EventBus;
  /** Whether a domain exists, for the registry's checks and the services' access rules. */
  identity: Pick<Identity, "domain">;
  /** Where the device-secret key (`device-secret-key`) is kept. */
  keys: KeyStore;
  /** Counts secret hashes and checks (`dms_device_secret_hashes_total`) when given. */
  metrics?: Registry;
}

/** The things capability: the registry over its store, device credentials, and the services with their access rules. */
export interface ThingsCapability {
  store: ThingStore;
  registry: ThingRegistry;
  credentials: DeviceCredentials;
  thingTypes: ThingTypesService;
  things: ThingsService;
  thingGroups: ThingGroupsService;
}

/** Resolves once the store has been read into memory (the registry's synchronous lookups). */
export async function createThings(deps: ThingsCapabilityDeps): Promise<ThingsCapability> {
  const key = Buffer.from(await deps.keys.key("device-secret-key"), "base64url");
  const credentials = new DeviceCredentials({ key });
  if (deps.metrics) registerCredentialMetrics(credentials, deps.metrics);
  const { store } = deps;
  const registry = await ThingRegistry.open(
    store,
    deps.bus,
    (id) => deps.identity.domain(id) !== undefined,
    credentials,
  );
  const services = { registry, identity: deps.identity };
  return {
    store,
    registry,
    credentials,
    thingTypes: new ThingTypesService(services),
    things: new ThingsService(services),
    thingGroups: new ThingGroupsService(services),
  };
}
