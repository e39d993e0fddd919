import type { RouteModule } from "../context.js";
import { adminDomainRoutes } from "./admin-domains.js";
import { authRoutes } from "./auth.js";
import { fileRoutes } from "./files.js";
import { observationRoutes } from "./observations.js";
import { searchRoutes } from "./search.js";
import { storageFileRoutes } from "./storage-files.js";

/** Every REST area, registered in one place. */
export const routeModules: readonly RouteModule[] = [
  authRoutes,
  adminDomainRoutes,
  fileRoutes,
  storageFileRoutes,
  searchRoutes,
  observationRoutes,
];
