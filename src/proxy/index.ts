export { createProxy, type Proxy, type ProxyOptions } from "./proxy.js";
export { SessionManager, PortsExhausted, type PortRange } from "./sessions.js";
export type { ProxySession, ProxyStatus, SessionState, StopReason } from "./session.js";
export { DEFAULT_TIMEOUT_SECONDS } from "./control.js";
