import type { RouteModule } from "../context.js";
import { actionRoutes } from "./actions.js";
import { adminDomainRoutes } from "./admin-domains.js";
import { authRoutes } from "./auth.js";
import { eventRoutes } from "./events.js";
import { ruleRoutes } from "./rules.js";

/** Every REST area, registered in one place. */
export const routeModules: readonly RouteModule[] = [
  authRoutes,
  adminDomainRoutes,
  ruleRoutes,
  actionRoutes,
  eventRoutes,
];
