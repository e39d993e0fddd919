import type { MiddlewareHandler } from "hono";
import { Outbox, realTimers, type Timers } from "../actions/index.js";
import {
  createAuth,
  jwtSecret,
  type ApiKeysService,
  type AuthEnv,
  type DomainsService,
  type Identity,
  type Tokens,
  type UsersService,
} from "../auth/index.js";
import { BusRelay, EventBus } from "../bus/index.js";
import { topicLayout, type Config } from "../config/index.js";
import type { ObservationIngest } from "../engine/index.js";
import { kafkaPublisher, noPublisher, type EventPublisher, type EventStore } from "../events/index.js";
import { createFiles, type Files } from "../files/index.js";
import { createJobs, type JobsService, type ThingJobs } from "../jobs/index.js";
import { observationsProducer } from "../kafka/index.js";
import { createMailer, type Mailer } from "../mail/index.js";
import { createLogger, createMetrics, type Logger, type Metrics } from "../observability/index.js";
import {
  createExports,
  type Exports,
  type FindRunner,
  type ObservationReader,
  type ObservationStore,
} from "../observations/index.js";
import { openObservationBackend, type ObservationBackend } from "./observation-backend.js";
import { ProbedCondition, Readiness } from "../readiness/index.js";
import { createRules, type Rules } from "../rules/index.js";
import { createSearch, type SearchIndex } from "../search/index.js";
import { UrlSigner, signingKey } from "../signing/index.js";
import { openStores, type Stores } from "../stores.js";
import {
  createThings,
  type DeviceCredentials,
  type ThingGroupsService,
  type ThingRegistry,
  type ThingTypesService,
  type ThingsService,
} from "../things/index.js";
import type { StartOptions } from "./types.js";

/**
 * What every process builds, whatever its roles: the stores, the bus and the capabilities REST
 * answers with. The parts a role adds are chosen from them (`partsForRoles`).
 */
export interface Capabilities {
  readonly config: Config;
  readonly stores: Stores;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly bus: EventBus;
  readonly readiness: Readiness;
  readonly clock: () => number;
  readonly timers: Timers;
  /** Asks the database whether it answers (`/readyz` condition `database`), in a process with the `api` role. */
  readonly databaseProbe: ProbedCondition | undefined;
  /** Follows other processes' changes through the database; undefined when none can share it. */
  readonly relay: BusRelay | undefined;
  readonly identity: Identity;
  readonly tokens: Tokens;
  readonly domains: DomainsService;
  readonly users: UsersService;
  readonly apiKeys: ApiKeysService;
  /** The middleware REST and the proxy control interface authenticate with. */
  readonly authenticate: MiddlewareHandler<AuthEnv>;
  readonly registry: ThingRegistry;
  readonly credentials: DeviceCredentials;
  readonly thingTypes: ThingTypesService;
  readonly things: ThingsService;
  readonly thingGroups: ThingGroupsService;
  /** The base of signed URLs: `DMS_PUBLIC_URL`, or the listener's address once known. */
  readonly publicUrl: { value: string };
  readonly signer: UrlSigner;
  readonly files: Files;
  readonly search: SearchIndex;
  readonly mailer: Mailer;
  readonly rules: Rules;
  readonly events: EventStore;
  /** Where observations are kept: the database's store, or OpenSearch's with `OPENSEARCH_URL`. */
  readonly observations: ObservationStore;
  /** The database's reader of its observations (FIND and exports read through `find` and `exports`). */
  readonly observationReader: ObservationReader;
  /** FIND: evaluated off the main thread, or answered by OpenSearch; each request within its time budget. */
  readonly find: FindRunner;
  /** The observation store chosen by configuration, with what the engine writes and the `store` role. */
  readonly observationBackend: ObservationBackend;
  readonly exports: Exports;
  readonly jobs: ThingJobs;
  readonly thingJobs: JobsService;
  readonly publisher: EventPublisher;
  /** The observations topic's producer, with Kafka. */
  readonly observationsTopic: { ingest: ObservationIngest; close(): Promise<void> } | undefined;
  readonly actions: Outbox;
  /** Where the outbox's SET_RESOURCE observations go: set by `partsForRoles`. */
  readonly setResourceFeed: { ingest: ObservationIngest | undefined };
}

/** Step one of `startDms`: opens the stores and builds every capability, in the order they depend on each other. */
export async function buildCapabilities(config: Config, options: StartOptions): Promise<Capabilities> {
  const { roles } = config;
  const setResourceFeed: { ingest: ObservationIngest | undefined } = { ingest: undefined };
  const logger = options.logger ?? createLogger(config.DMS_LOG_LEVEL);
  const clock = options.clock ?? options.timers?.now ?? Date.now;
  const timers: Timers = options.timers ?? { now: clock, setTimeout: realTimers.setTimeout };
  const metrics = createMetrics();
  const readiness = new Readiness();
  const stores = await openStores({ config, engine: roles.has("engine"), clock, logger });
  // `/readyz` names the database while it does not answer; operations meanwhile answer 503 SERVICE_UNAVAILABLE.
  const databaseProbe = roles.has("api") ? probeDatabase(config, stores, readiness, logger) : undefined;
  await databaseProbe?.start();
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
  const publicUrl = { value: config.DMS_PUBLIC_URL };
  const signer = new UrlSigner({
    key: await signingKey(config.DMS_JWT_SECRET, stores.keys),
    baseUrl: () => publicUrl.value,
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
  const observationReader = stores.observations.reader;
  const observationBackend = openObservationBackend(config, {
    opened: stores.observations,
    registry,
    bus,
    deadLetters: stores.deadLetters,
    logger,
    metrics: metrics.registry,
    readiness,
    clock,
  });
  const observations = observationBackend.store;
  const find = observationBackend.find;
  const exports = createExports({
    store: stores.exports,
    reader: observationBackend.reader,
    registry,
    mailer,
    logger,
    clock,
    files: stores.exportFiles,
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
  // the outbox's SET_RESOURCE feeds observations to the engine. The outbox reads `setResourceFeed`
  // when it delivers, once the parts have set it. With Kafka, observations go to the observations topic from every
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
    deps: { config, logger, mailer, ingest: () => setResourceFeed.ingest, events, publisher, timers },
  });
  return {
    config,
    stores,
    logger,
    metrics,
    bus,
    readiness,
    clock,
    timers,
    databaseProbe,
    relay,
    identity,
    tokens,
    domains,
    users,
    apiKeys,
    authenticate,
    registry,
    credentials,
    thingTypes,
    things,
    thingGroups,
    publicUrl,
    signer,
    files,
    search,
    mailer,
    rules,
    events,
    observations,
    observationReader,
    observationBackend,
    find,
    exports,
    jobs,
    thingJobs,
    publisher,
    observationsTopic,
    actions,
    setResourceFeed,
  };
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
