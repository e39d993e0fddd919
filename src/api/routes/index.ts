import type { RouteModule } from "../context.js";
import { adminApiKeyRoutes } from "./admin-api-keys.js";
import { actionRoutes } from "./actions.js";
import { adminDomainRoutes } from "./admin-domains.js";
import { adminThingGroupRoutes } from "./admin-thing-groups.js";
import { adminThingTypeRoutes } from "./admin-thing-types.js";
import { adminThingRoutes } from "./admin-things.js";
import { adminUserRoutes } from "./admin-users.js";
import { authRoutes } from "./auth.js";
import { fileRoutes } from "./files.js";
import { observationRoutes } from "./observations.js";
import { searchRoutes } from "./search.js";
import { storageFileRoutes } from "./storage-files.js";
import { eventRoutes } from "./events.js";
import { ruleRoutes } from "./rules.js";
import { observationsIngestRoutes } from "./observations-ingest.js";
import { thingJobRoutes } from "./thing-jobs.js";
import { manifestRoutes } from "./manifest.js";
import { userRoutes } from "./users.js";
import { thingTypeRoutes } from "./thing-types.js";
import { thingRoutes } from "./things.js";

/** Every REST area, registered in one place. */
const modules = [
  manifestRoutes,
  authRoutes,
  adminDomainRoutes,
  adminUserRoutes,
  adminApiKeyRoutes,
  adminThingTypeRoutes,
  adminThingRoutes,
  adminThingGroupRoutes,
  fileRoutes,
  storageFileRoutes,
  searchRoutes,
  observationsIngestRoutes,
  ruleRoutes,
  actionRoutes,
  eventRoutes,
  observationRoutes,
  thingJobRoutes,
  userRoutes,
  thingTypeRoutes,
  thingRoutes,
] as const;

type DepsOf<M> = M extends RouteModule<infer D> ? D : never;
type AllOf<U> = (U extends unknown ? (u: U) => void : never) extends (all: infer I) => void ? I : never;

/** What REST needs from the wiring: everything some area declares it uses, and nothing else. */
export type RouteDeps = AllOf<DepsOf<(typeof modules)[number]>>;

export const routeModules: readonly RouteModule<RouteDeps>[] = modules;
