import { pino, type Logger } from "pino";
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";

export type { Logger };

/**
 * JSON lines (for log shippers) unless stdout is a terminal, where pino-pretty
 * makes them readable lines; `pretty` overrides the guess.
 */
export function createLogger(level: string, pretty: boolean = process.stdout.isTTY === true): Logger {
  const options = { level, base: { service: "dms" }, timestamp: pino.stdTimeFunctions.isoTime };
  if (!pretty) return pino(options);
  return pino({
    ...options,
    transport: {
      target: "pino-pretty",
      options: { colorize: true, translateTime: "SYS:HH:MM:ss.l", ignore: "service" },
    },
  });
}

/** The process's metrics; every capability registers its own on `registry`. */
export interface Metrics {
  registry: Registry;
  httpRequests: Counter<"method" | "route" | "status">;
  httpDuration: Histogram<"method" | "route">;
  /** Provisioning progress: `state="total"` things in the file, `state="applied"` so far (equal once applied). */
  provisioning: Gauge<"state">;
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
    provisioning: new Gauge({
      name: "dms_provisioning_things",
      help: "Things of the provisioning file: total, and applied so far",
      labelNames: ["state"],
      registers: [registry],
    }),
  };
}
