import { serve, type ServerType } from "@hono/node-server";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Outbox, realTimers, type ActionSink, type Timers } from "./actions/index.js";
import { createApp, routeModules, type Api } from "./api/index.js";
import {
  createAuth,
  jwtSecret,
  type ApiKeysService,
  type DomainsService,
  type Identity,
  type Tokens,
  type UsersService,
} from "./auth/index.js";
import { BusRelay, EventBus } from "./bus/index.js";
import { topicLayout, type Config } from "./config/index.js";
import { answerMalformedRequests } from "./errors/index.js";
import { kafkaPublisher, noPublisher, type EventStore } from "./events/index.js";
import {
  createEngineService,
  deviceIngest,
  MqttObservationSource,
  type DeadLetterStore,
  type EngineService,
  type ObservationIngest,
} from "./engine/index.js";
import { observationsProducer } from "./kafka/index.js";
import { createMailer, type Mailer } from "./mail/index.js";
import { DeviceJobs, JobScheduler, createJobs, type JobsService, type ThingJobs } from "./jobs/index.js";
import { DeviceBridge } from "./mqtt/index.js";
import { createLogger, createMetrics, type Logger, type Metrics } from "./observability/index.js";
import { provisionFromFile } from "./provision/index.js";
import { RuleCache, createRules, type RuleStore, type RulesService } from "./rules/index.js";
import { createProxy, type Proxy } from "./proxy/index.js";
import { createFiles, type Files } from "./files/index.js";
import {
  type ObservationReader,
  type ObservationStore,
  createExports,
  createFindRunner,
  type Exports,
  type FindRunner,
} from "./observations/index.js";
import { createSearch, type SearchIndex } from "./search/index.js";
import { UrlSigner, signingKey } from "./signing/index.js";
import { RetentionSweeper, type Db } from "./store/index.js";
import { openStores, type Stores } from "./stores.js";
import { retentionTargets } from "./retention.js";
import {
  CredentialsBusyError,
  createThings,
  type ThingGroupsService,
  type ThingRegistry,
  type ThingTypesService,
  type ThingsService,
} from "./things/index.js";
import { ProbedCondition, Readiness } from "./readiness/index.js";

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

/**
 * Opens storage, starts listening (so that `/healthz` and `/readyz` answer at
 * once), applies provisioning, then starts the parts `DMS_ROLES` names;
 * `/readyz` answers 200 from then on. Resolves when everything has started.
 *
 * Which parts each role adds (every process builds the capabilities REST answers with):
 *
 * | role        | parts                                                                 |
 * |-------------|-----------------------------------------------------------------------|
 * | `api`       | the REST listener                                                     |
 * | `engine`    | the rule engine with its Kafka source (createEngineService)            |
 * | `actions`   | the outbox's deliveries and the events publisher                      |
 * | `scheduler` | the export schedules, the retention sweeper, the jobs' timers         |
 * | `mqtt`      | the device MQTT bridge (jobs and observations of devices)             |
 * | `proxy`     | the TCP proxy and its control interface                               |
 */
export async function startDms(config: Config, options: StartOptions = {}): Promise<Dms> {
  const { roles } = config;
  const logger = options.logger ?? createLogger(config.DMS_LOG_LEVEL);
  const clock = options.clock ?? options.timers?.now ?? Date.now;
  const timers: Timers = options.timers ?? { now: clock, setTimeout: realTimers.setTimeout };
  const metrics = createMetrics();
  const readiness = new Readiness();
  const stores = await openStores({ config, engine: roles.has("engine"), clock, logger });
  // `/readyz` names the database while it does not answer; operations meanwhile answer 503 SERVICE_UNAVAILABLE.
  const database = roles.has("api") ? probeDatabase(config, stores, readiness, logger) : undefined;
  await database?.start();
  const bus = new EventBus();
  // Processes that share this database (roles split over processes) follow each other's changes
  // through it; started before provisioning so that running processes see its changes too.
  const relay = stores.busEvents
    ? new BusRelay({
        store: stores.busEvents,
        bus,
        logger,
        pollMs: config.DMS_BUS_POLL_MS,
        ...(stores.busWakeup && { wakeup: stores.busWakeup }),
      })
    : undefined;
  await relay?.start();

  // The capabilities every process has: REST in any process answers with them.
  const auth = await createAuth({
    store: stores.identity,
    bus,
    clock,
    tokenSecret: await jwtSecret(config.DMS_JWT_SECRET, stores.keys),
  });
  const { identity, tokens, domains, users, apiKeys, authentication: authenticate } = auth;
  const { registry, credentials, thingTypes, things, thingGroups } = await createThings({
    store: stores.things,
    bus,
    identity,
    keys: stores.keys,
    metrics: metrics.registry,
  });
  let publicUrl = config.DMS_PUBLIC_URL;
  const signer = new UrlSigner({
    key: await signingKey(config.DMS_JWT_SECRET, stores.keys),
    baseUrl: () => publicUrl,
    clock,
  });
  const files = createFiles({
    store: stores.files,
    signer,
    registry,
    identity,
  });
  // Built before provisioning so that the bus keeps it current from the first change on.
  const search = createSearch({ identity, registry, bus });
  const mailer = createMailer(config.SMTP_URL, config.SMTP_FROM, logger);
  const rules = createRules({
    store: stores.rules,
    bus,
    identity,
    registry,
    allowPrivateWebhooks: config.DMS_WEBHOOK_ALLOW_PRIVATE,
  });
  const events = stores.events;
  const opened = stores.observations;
  const observations = opened.store;
  const observationReader = opened.reader;
  const find = createFindRunner({
    source: opened.source,
    reader: observationReader,
    threads: config.DMS_FIND_THREADS,
    budgetMs: config.DMS_FIND_TIMEOUT_MS,
    columnCacheBytes: config.DMS_FIND_COLUMN_CACHE_MB * 1024 * 1024,
  });
  const exports = createExports({
    store: stores.exports,
    reader: observationReader,
    registry,
    mailer,
    logger,
    clock,
    dataDir: config.DMS_DATA_DIR,
    signer,
    metrics: metrics.registry,
  });
  const { jobs, service: thingJobs } = createJobs({
    store: stores.jobs,
    bus,
    registry,
    identity,
    signer,
    clock,
    logger,
  });

  // Triggered actions and SET_RESOURCE observations go round: the engine hands actions to the outbox,
  // the outbox's SET_RESOURCE feeds observations to the engine. The outbox reads `ingest` when it
  // delivers, once both exist. With Kafka, observations go to the observations topic from every
  // process, so the engine process owning the thing's partition evaluates them.
  const publisher = config.KAFKA_BROKERS
    ? kafkaPublisher(config.KAFKA_BROKERS, config.KAFKA_EVENTS_TOPIC, topicLayout(config), logger)
    : noPublisher;
  const observationsTopic = config.KAFKA_BROKERS
    ? observationsProducer(config.KAFKA_BROKERS, config.KAFKA_OBSERVATIONS_TOPIC, topicLayout(config), logger)
    : undefined;
  const actions = new Outbox({
    store: stores.outbox,
    logger,
    timers,
    concurrency: options.actionConcurrency,
    registry: metrics.registry,
    deps: { config, logger, mailer, ingest: () => ingest, events, publisher, timers },
  });
  // Only the engine reads every rule: followed from here on (before provisioning), so that it starts
  // on every rule without asking the store.
  const ruleCache = roles.has("engine") ? await RuleCache.open(rules.store, bus) : undefined;
  const engine: EngineService | undefined =
    ruleCache && stores.state
      ? createEngineService({
          config,
          deadLetters: stores.deadLetters,
          state: stores.state,
          logger,
          metrics,
          readiness,
          bus,
          registry,
          observations,
          clock,
          domainPath: (id) => identity.pathOf(id),
          sink: actionSink(options, actions),
          loadRules: () => ruleCache.all(),
        })
      : undefined;
  const ingest: ObservationIngest | undefined = observationsTopic?.ingest ?? engine?.ingest;

  const retention = roles.has("scheduler")
    ? new RetentionSweeper({
        targets: retentionTargets(config, stores),
        clock,
        logger,
        registry: metrics.registry,
      })
    : undefined;
  const jobScheduler = roles.has("scheduler") ? new JobScheduler(jobs, logger, options.jobsPollMs) : undefined;
  const mqtt = roles.has("mqtt")
    ? createDeviceBridge(config, {
        jobs,
        registry,
        bus,
        logger,
        metrics,
        observationsTopic,
        engine,
        deadLetters: stores.deadLetters,
        clock,
      })
    : undefined;
  const deviceBridge = mqtt?.bridge;
  const proxy = roles.has("proxy")
    ? createProxy({ config, logger, metrics, things: registry, authentication: authenticate })
    : undefined;

  const services: Services = {
    config,
    stores,
    db: stores.sqlite,
    logger,
    metrics,
    bus,
    readiness,
    clock,
    identity,
    tokens,
    domains,
    users,
    apiKeys,
    registry,
    thingTypes,
    things,
    thingGroups,
    observations,
    observationReader,
    find,
    exports,
    mailer,
    signer,
    files,
    search,
    ruleStore: rules.store,
    rules: rules.service,
    actions,
    events,
    jobs,
    thingJobs,
    ingest,
    engine,
    jobScheduler,
    retention,
    deviceBridge,
    proxy,
  };
  const provisioning = config.DMS_PROVISION ? readiness.register("provisioning", "not started") : undefined;
  const startup = readiness.register("components", "waiting for provisioning");

  // Started in this order, stopped in the reverse one.
  const components: Component[] = [
    // First in, so last to stop: the actions and the MQTT bridge may still produce while they stop.
    ...(observationsTopic
      ? [{ name: "observations-producer", start: async () => {}, stop: () => observationsTopic.close() }]
      : []),
    // Instant exports run in whichever process accepted them, so the runner stops with every process.
    { name: "export-runner", start: async () => {}, stop: () => exports.runner.stop() },
    ...(roles.has("scheduler") ? [exports.scheduler] : []),
    ...(retention ? [retention] : []),
    ...(roles.has("actions")
      ? [
          {
            name: "actions",
            start: () => actions.start(),
            stop: async () => {
              await actions.stop();
              await publisher.close();
            },
          },
        ]
      : []),
    ...(engine ? [{ name: "engine", start: () => engine.start(), stop: () => engine.stop() }] : []),
    ...(jobScheduler ? [jobScheduler] : []),
    // The source before the bridge and stopped after it: no publish finds it not taking yet, or gone.
    ...(mqtt?.source ? [mqtt.source] : []),
    ...(deviceBridge ? [deviceBridge] : []),
    ...(proxy ? [proxy] : []),
  ];

  const app = createApp({ ...services, authentication: authenticate }, routeModules);
  const started: Component[] = [];
  let server: ServerType | undefined;
  let url: string | undefined;

  const close = async (): Promise<void> => {
    for (const c of started.reverse()) {
      await c.stop().catch((err: unknown) => logger.error({ err, component: c.name }, "stop failed"));
    }
    if (server) await new Promise<void>((resolve) => server!.close(() => resolve()));
    search.close();
    registry.close();
    ruleCache?.close();
    jobs.close();
    await find.close();
    await relay?.stop();
    await database?.stop();
    await stores.close();
  };

  try {
    // Listening first: probes and the admin API answer while a large provisioning file is applied.
    if (config.roles.has("api")) {
      server = await listen(app, config.DMS_HTTP_HOST, config.DMS_HTTP_PORT);
      const { port } = server.address() as AddressInfo;
      url = `http://127.0.0.1:${port}`;
      // A port chosen by the OS (tests) is known only now: signed URLs must point at it.
      if (config.DMS_HTTP_PORT === 0 && publicUrl.endsWith(":0")) publicUrl = url;
      logger.info({ port }, "REST interface listening");
      options.onListening?.(url);
    }
    if (config.DMS_PROVISION && provisioning) {
      provisioning.waiting(`reading ${config.DMS_PROVISION}`);
      const summary = await provisionFromFile(config.DMS_PROVISION, services, ({ thingsDone, thingsTotal }) => {
        metrics.provisioning.set({ state: "applied" }, thingsDone);
        metrics.provisioning.set({ state: "total" }, thingsTotal);
        provisioning.waiting(`things ${thingsDone} of ${thingsTotal} applied`);
      });
      provisioning.ready();
      logger.info({ file: config.DMS_PROVISION, ...summary, secretHashes: credentials.work }, "provisioning applied");
    }
    // The engine and the device bridge start on a complete registry: no observation of a thing
    // the file is about to create ends as a dead letter, no device is refused for a secret not yet applied.
    for (const c of components) {
      startup.waiting(`starting ${c.name}`);
      await c.start();
      started.push(c);
      logger.info({ component: c.name }, "started");
    }
    startup.ready();
  } catch (err) {
    await close();
    throw err;
  }
  return { services, app, url, close };
}

/** How often the api process asks the database whether it answers (`/readyz` condition `database`). */
const DATABASE_PROBE_MS = 1000;

function probeDatabase(
  config: Config,
  stores: Pick<Stores, "ping" | "backend">,
  readiness: Readiness,
  logger: Logger,
): ProbedCondition {
  return new ProbedCondition(readiness, {
    name: "database",
    probe: () => stores.ping(),
    everyMs: DATABASE_PROBE_MS,
    timeoutMs: config.DMS_DATABASE_CONNECT_TIMEOUT_MS,
    onChange: (err) =>
      err
        ? logger.warn({ err, backend: stores.backend }, "database unreachable")
        : logger.info({ backend: stores.backend }, "database reachable again"),
  });
}

/**
 * Where the engine hands what its rules trigger: the durable outbox, which delivers them (in the
 * process with the `actions` role) with retries and dead letters; a test may watch them instead.
 */
function actionSink(options: Pick<StartOptions, "actionSink">, outbox: Outbox): ActionSink {
  return options.actionSink ?? outbox;
}

interface DeviceBridgeDeps {
  jobs: ThingJobs;
  registry: ThingRegistry;
  bus: EventBus;
  logger: Logger;
  metrics: Metrics;
  deadLetters: DeadLetterStore;
  clock: () => number;
  observationsTopic: { ingest: ObservationIngest } | undefined;
  engine: EngineService | undefined;
}

/**
 * The device MQTT bridge (the jobs' device side) and the MQTT observation source on its publishes:
 * to the topic with Kafka, else to this process's engine; no source when neither is there.
 */
function createDeviceBridge(
  config: Config,
  { jobs, registry, bus, logger, metrics, deadLetters, clock, observationsTopic, engine }: DeviceBridgeDeps,
): { bridge: DeviceBridge; source: Component | undefined } {
  const device = new DeviceJobs(jobs);
  const bridge = new DeviceBridge({
    mqttUrl: config.MQTT_URL,
    port: config.DMS_MQTT_PORT,
    host: config.DMS_HTTP_HOST,
    jobs: {
      handle: (thingName, suffix, payload) => device.handle(thingName, suffix, payload),
      notifications: (thingName) => device.notifications(thingName),
      onPendingChanged: (listener) => bus.follow("jobs.pending", ({ things }) => listener(new Set(things))),
    },
    verifyThingSecret: (thingName, s) => registry.verifyThingSecret(thingName, s),
    isBusy: (err) => err instanceof CredentialsBusyError,
    bus,
    logger,
    registry: metrics.registry,
  });
  // Device observations, decoded once as their device's (a device speaks only for itself): what the
  // decode refused is a dead letter of this process.
  const takeDevice = deviceIngest({
    topic: observationsTopic?.ingest,
    engine: engine?.accept,
    deadLetters,
    domainOf: (thingName) => registry.thing(thingName)?.domain,
    clock,
  });
  if (!takeDevice) return { bridge, source: undefined };
  const source = new MqttObservationSource(bridge);
  return { bridge, source: { name: "mqtt-source", start: () => source.start(takeDevice), stop: () => source.stop() } };
}

function listen(app: Api, hostname: string, port: number): Promise<ServerType> {
  return new Promise((resolve, reject) => {
    const server = serve({ fetch: app.fetch, hostname, port }, () => resolve(server));
    answerMalformedRequests(server as Server);
    server.once("error", reject);
  });
}
