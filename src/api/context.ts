import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Identity, Principal, Tokens } from "../auth/index.js";
import type { JobScheduler, ThingJobs } from "../jobs/index.js";
import type { DeviceBridge } from "../mqtt/index.js";
import type { EventBus } from "../bus/index.js";
import type { Config } from "../config/index.js";
import type { Logger, Metrics } from "../observability/index.js";
import type { Db } from "../store/index.js";
import type { ThingRegistry } from "../things/index.js";

/** What every route module may use. Capabilities add their services here as they land. */
export interface Services {
  config: Config;
  db: Db;
  logger: Logger;
  metrics: Metrics;
  bus: EventBus;
  identity: Identity;
  tokens: Tokens;
  registry: ThingRegistry;
  /** Milliseconds since the epoch; tests replace it to move time. */
  clock: () => number;
  /** Thing jobs and job documents (src/jobs). */
  jobs?: ThingJobs;
  /** Runs the jobs' timers when this process has the `scheduler` role. */
  jobScheduler?: JobScheduler;
  /** The device MQTT bridge when this process has the `mqtt` role. */
  deviceBridge?: DeviceBridge;
}

export interface ApiEnv {
  Variables: {
    requestId: string;
    log: Logger;
    principal: Principal;
  };
}

export type Api = OpenAPIHono<ApiEnv>;

/** Every REST area is one module of this shape, registered in `routes/index.ts`. */
export type RouteModule = (app: Api, services: Services) => void;
