export { createApp } from "./app.js";
export { routeModules, type RouteDeps } from "./routes/index.js";
export type { Api, ApiEnv, RouteModule } from "./context.js";
export type { AppDeps } from "./app.js";
export { jsonBody, jsonResponses, emptyResponses, ErrorSchema } from "./openapi.js";
export { issueToError } from "./validation.js";
