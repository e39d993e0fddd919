import type { RouteModule } from "../context.js";
import { adminDomainRoutes } from "./admin-domains.js";
import { authRoutes } from "./auth.js";
import { thingJobRoutes } from "./thing-jobs.js";

/** Every REST area, registered in one place. */
export const routeModules: readonly RouteModule[] = [authRoutes, adminDomainRoutes, thingJobRoutes];
