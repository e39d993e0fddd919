export { createApp } from "./app.js";
export { routeModules } from "./routes/index.js";
export type { Api, ApiEnv, RouteModule, Services } from "./context.js";
export { jsonBody, jsonResponses, emptyResponses, ErrorSchema } from "./openapi.js";
export { issueToError } from "./validation.js";
