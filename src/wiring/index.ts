export { buildCapabilities, type Capabilities } from "./capabilities.js";
export { partsForRoles, type Parts } from "./parts.js";
export { startParts } from "./lifecycle.js";
export type { Component, Dms, Services, StartOptions } from "./types.js";
