import { pino, type Logger } from "pino";
import { Counter, Histogram, Registry, collectDefaultMetrics } from "prom-client";

export type { Logger };

export function createLogger(level: string): Logger {
  return pino({ level, base: { service: "dms" }, timestamp: pino.stdTimeFunctions.isoTime });
}

/** The process's metrics; every capability registers its own on `registry`. */
export interface Metrics {
  registry: Registry;
  httpRequests: Counter<"method" | "route" | "status">;
  httpDuration: Histogram<"method" | "route">;
}

export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: "dms_" });
  return {
    registry,
    httpRequests: new Counter({
      name: "dms_http_requests_total",
      help: "REST requests answered, by route and status",
      labelNames: ["method", "route", "status"],
      registers: [registry],
    }),
    httpDuration: new Histogram({
      name: "dms_http_request_duration_seconds",
      help: "REST request duration",
      labelNames: ["method", "route"],
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5],
      registers: [registry],
    }),
  };
}
