import type { OpenAPIHono } from "@hono/zod-openapi";
import type { ActionSink, Outbox } from "../actions/index.js";
import type { Identity, Principal, Tokens } from "../auth/index.js";
import type { JobScheduler, ThingJobs } from "../jobs/index.js";
import type { DeviceBridge } from "../mqtt/index.js";
import type { EventBus } from "../bus/index.js";
import type { Config } from "../config/index.js";
import type { EventStore } from "../events/index.js";
import type { EngineService, ObservationIngest } from "../engine/index.js";
import type { Mailer } from "../mail/index.js";
import type { Exports, FindRunner, ObservationReader, ObservationStore } from "../observations/index.js";
import type { Logger, Metrics } from "../observability/index.js";
import type { Proxy } from "../proxy/index.js";
import type { Files } from "../files/index.js";
import type { SearchIndex } from "../search/index.js";
import type { UrlSigner } from "../signing/index.js";
import type { RuleStore, RulesService } from "../rules/index.js";
import type { Db, RetentionSweeper } from "../store/index.js";
import type { ThingRegistry } from "../things/index.js";
import type { Readiness } from "../readiness/index.js";

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
  observations: ObservationStore;
  /** FIND and export reads of the observation table. */
  observationReader: ObservationReader;
  /** FIND evaluation off the main thread, each request within its time budget. */
  find: FindRunner;
  /** Export jobs, their executions, runner and scheduler. */
  exports: Exports;
  mailer: Mailer;
  /** Signs and checks the `/storage/...` URLs (files, exports, job documents). */
  signer: UrlSigner;
  files: Files;
  search: SearchIndex;
  /** Rules as stored (the engine starts on `RuleCache`, kept current from `rule.changed`). */
  ruleStore: RuleStore;
  /** The Rules operations with their access checks. */
  rules: RulesService;
  /** The durable outbox: the engine's ActionSink, and the dead letters. */
  actions: Outbox;
  events: EventStore;
  /** The rule engine, when this process runs the `engine` role. */
  engine?: EngineService;
  /**
   * Feeds SET_RESOURCE observations into the engine: the observations topic's producer when
   * `KAFKA_BROKERS` is set (every process), else this process's engine when it runs one.
   */
  ingest?: ObservationIngest;
  /** Where the engine hands triggered actions: the outbox (`actions`). */
  actionSink?: ActionSink;
  /** Milliseconds since the epoch; tests replace it to move time. */
  clock: () => number;
  /** The TCP proxy, when this process runs the `proxy` role (its bound ports are read from here). */
  proxy?: Proxy;
  /** Thing jobs and job documents (src/jobs). */
  jobs?: ThingJobs;
  /** Runs the jobs' timers when this process has the `scheduler` role. */
  jobScheduler?: JobScheduler;
  /** Deletes what is older than the `DMS_*_RETENTION` windows, when this process has the `scheduler` role. */
  retention?: RetentionSweeper;
  /** The device MQTT bridge when this process has the `mqtt` role. */
  deviceBridge?: DeviceBridge;
  /** What the service waits for before it takes traffic (`GET /readyz`); parts register conditions. */
  readiness: Readiness;
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
