import type { ActionSink, Outbox, Timers } from "../actions/index.js";
import type { Api } from "../api/index.js";
import type { ApiKeysService, DomainsService, Identity, Tokens, UsersService } from "../auth/index.js";
import type { EventBus } from "../bus/index.js";
import type { Config } from "../config/index.js";
import type { EngineService, ObservationIngest } from "../engine/index.js";
import type { EventStore } from "../events/index.js";
import type { Files } from "../files/index.js";
import type { JobScheduler, JobsService, ThingJobs } from "../jobs/index.js";
import type { Mailer } from "../mail/index.js";
import type { DeviceBridge } from "../mqtt/index.js";
import type { Logger, Metrics } from "../observability/index.js";
import type { Exports, FindRunner, ObservationReader, ObservationStore } from "../observations/index.js";
import type { Proxy } from "../proxy/index.js";
import type { Readiness } from "../readiness/index.js";
import type { RuleStore, RulesService } from "../rules/index.js";
import type { SearchIndex } from "../search/index.js";
import type { UrlSigner } from "../signing/index.js";
import type { Db, RetentionSweeper } from "../store/index.js";
import type { Stores } from "../stores.js";
import type { ThingGroupsService, ThingRegistry, ThingTypesService, ThingsService } from "../things/index.js";

/** A part of the service with a life of its own (listeners, consumers, schedulers). */
export interface Component {
  readonly name: string;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * What this process built, complete when `startDms` resolves (nothing is added later). Tests and
 * provisioning read it; no part receives it: each is made from the few parts it uses.
 */
export interface Services {
  readonly config: Config;
  /** Every store seam, on the database the configuration chose. */
  readonly stores: Stores;
  /** The service's SQLite database when the stores are on SQLite; tests and tools read it directly. */
  readonly db: Db | undefined;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly bus: EventBus;
  readonly readiness: Readiness;
  /** Milliseconds since the epoch; tests pass their own (`StartOptions.clock`). */
  readonly clock: () => number;
  readonly identity: Identity;
  readonly tokens: Tokens;
  /** The domain, user and API key operations with their access checks. */
  readonly domains: DomainsService;
  readonly users: UsersService;
  readonly apiKeys: ApiKeysService;
  readonly registry: ThingRegistry;
  /** The thing-type operations with their access checks. */
  readonly thingTypes: ThingTypesService;
  /** The thing operations with their access checks. */
  readonly things: ThingsService;
  /** The thing-group operations with their access checks. */
  readonly thingGroups: ThingGroupsService;
  readonly observations: ObservationStore;
  /** FIND and export reads of the observation table. */
  readonly observationReader: ObservationReader;
  /** FIND evaluation off the main thread, each request within its time budget. */
  readonly find: FindRunner;
  /** Export jobs, their executions, runner and scheduler. */
  readonly exports: Exports;
  readonly mailer: Mailer;
  /** Signs and checks the `/storage/...` URLs (files, exports, job documents). */
  readonly signer: UrlSigner;
  readonly files: Files;
  readonly search: SearchIndex;
  /** Rules as stored (the engine starts on `RuleCache`, kept current from `rule.changed`). */
  readonly ruleStore: RuleStore;
  /** The Rules operations with their access checks. */
  readonly rules: RulesService;
  /** The durable outbox of triggered actions, and their dead letters. */
  readonly actions: Outbox;
  readonly events: EventStore;
  /** Thing jobs and job documents (src/jobs): the device side and the scheduler use them. */
  readonly jobs: ThingJobs;
  /** The thing-job operations with their access checks. */
  readonly thingJobs: JobsService;
  /**
   * Feeds SET_RESOURCE observations into the engine: the observations topic's producer when
   * `KAFKA_BROKERS` is set (every process), else this process's engine when it runs one.
   */
  readonly ingest: ObservationIngest | undefined;
  /** Role `engine`: the rule engine. */
  readonly engine: EngineService | undefined;
  /** Role `scheduler`: the jobs' timers. */
  readonly jobScheduler: JobScheduler | undefined;
  /** Role `scheduler`: deletes what is older than the `DMS_*_RETENTION` windows. */
  readonly retention: RetentionSweeper | undefined;
  /** Role `mqtt`: the device MQTT bridge. */
  readonly deviceBridge: DeviceBridge | undefined;
  /** Role `proxy`: the TCP proxy (its bound ports are read from here). */
  readonly proxy: Proxy | undefined;
}

export interface Dms {
  services: Services;
  app: Api;
  /** Base URL of the REST interface when it listens. */
  url: string | undefined;
  close(): Promise<void>;
}

export interface StartOptions {
  clock?: () => number;
  /** Clock and timers together (the outbox's retry waits); tests pass a fake one. Sets `clock` too. */
  timers?: Timers;
  logger?: Logger;
  /** Deliveries the outbox runs at once. */
  actionConcurrency?: number;
  /** Where the engine hands what its rules trigger; the outbox unless a test watches them here. */
  actionSink?: ActionSink;
  /** How often the job scheduler looks for due timers (ms); tests shorten it. */
  jobsPollMs?: number;
  /** Called once the REST interface listens, before provisioning and the components start. */
  onListening?: (url: string) => void;
}
