import { serve, type ServerType } from "@hono/node-server";
import { mkdtempSync } from "node:fs";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Outbox, realTimers, type Timers } from "./actions/index.js";
import { authentication, createApp, routeModules, type Api, type Services } from "./api/index.js";
import { Identity, Tokens, jwtSecret } from "./auth/index.js";
import { BusRelay, EventBus } from "./bus/index.js";
import { topicLayout, type Config } from "./config/index.js";
import { answerMalformedRequests } from "./errors/index.js";
import { SqliteEventStore, kafkaPublisher, noPublisher } from "./events/index.js";
import {
  createEngineService,
  DeadLetterStore,
  decodeDevicePayload,
  deviceIngest,
  GroupCommit,
  kafkaIngest,
  type Ingested,
} from "./engine/index.js";
import { createMailer } from "./mail/index.js";
import { DeviceJobs, JobDocuments, JobScheduler, SqliteJobStore, ThingJobs } from "./jobs/index.js";
import { migrations } from "./migrations.js";
import { DeviceBridge } from "./mqtt/index.js";
import { createLogger, createMetrics, type Logger } from "./observability/index.js";
import { provisionFromFile } from "./provision/index.js";
import { RuleCache, RulesService, SqliteRuleStore } from "./rules/index.js";
import { createProxy } from "./proxy/index.js";
import { Files, LocalFileStore } from "./files/index.js";
import { ObservationReader, ObservationStore, createExports, createFindRunner } from "./observations/index.js";
import { SearchIndex } from "./search/index.js";
import { UrlSigner, signingKey } from "./signing/index.js";
import { RetentionSweeper, openDatabase, startCheckpointer } from "./store/index.js";
import { retentionTargets } from "./retention.js";
import {
  CredentialsBusyError,
  DeviceCredentials,
  SqliteThingStore,
  ThingRegistry,
  deviceSecretKey,
  registerCredentialMetrics,
} from "./things/index.js";
import { Readiness } from "./readiness/index.js";

/** A part of the service with a life of its own (listeners, consumers, schedulers). */
export interface Component {
  readonly name: string;
  start(): Promise<void>;
  stop(): Promise<void>;
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
  /** How often the job scheduler looks for due timers (ms); tests shorten it. */
  jobsPollMs?: number;
  /** Called once the REST interface listens, before provisioning and the components start. */
  onListening?: (url: string) => void;
}

/**
 * Opens storage, starts listening (so that `/healthz` and `/readyz` answer at
 * once), applies provisioning, then starts the parts `DMS_ROLES` names;
 * `/readyz` answers 200 from then on. Resolves when everything has started.
 */
export async function startDms(config: Config, options: StartOptions = {}): Promise<Dms> {
  const logger = options.logger ?? createLogger(config.DMS_LOG_LEVEL);
  const clock = options.clock ?? options.timers?.now ?? Date.now;
  const timers: Timers = options.timers ?? { now: clock, setTimeout: realTimers.setTimeout };
  const db = openDatabase({ dataDir: config.DMS_DATA_DIR, migrations });
  // The engine commits a batch every few milliseconds: its checkpoints go to a thread of their own.
  const checkpointer =
    config.roles.has("engine") && config.DMS_DATA_DIR !== ":memory:" ? startCheckpointer(db) : undefined;
  const bus = new EventBus();
  // Processes that share this database (roles split over processes) follow each other's changes
  // through it; started before provisioning so that running processes see its changes too.
  const relay =
    config.DMS_DATA_DIR === ":memory:" ? undefined : new BusRelay({ db, bus, logger, pollMs: config.DMS_BUS_POLL_MS });
  relay?.start();
  const identity = new Identity(db, bus);
  const credentials = new DeviceCredentials({ key: deviceSecretKey(config.DMS_DATA_DIR) });
  const registry = new ThingRegistry(
    new SqliteThingStore(db),
    bus,
    (id) => identity.domain(id) !== undefined,
    credentials,
  );
  const readiness = new Readiness();
  let publicUrl = config.DMS_PUBLIC_URL;
  const signer = new UrlSigner({ key: signingKey(config), baseUrl: () => publicUrl, clock });
  const fileStore = new LocalFileStore({ db, dir: fileStoreDir(config.DMS_DATA_DIR), clock });
  // Built before provisioning so that the bus keeps it current from the first change on.
  const search = new SearchIndex({ identity, registry }, bus);
  const metrics = createMetrics();
  registerCredentialMetrics(credentials, metrics.registry);
  const mailer = createMailer(config.SMTP_URL, config.SMTP_FROM, logger);
  const ruleStore = new SqliteRuleStore(db, config.ruleIdPrefix);
  // Followed from here on, so that the engine starts on every rule without asking the store.
  const ruleCache = await RuleCache.open(ruleStore, bus);
  const events = new SqliteEventStore(db, clock);
  const publisher = config.KAFKA_BROKERS
    ? kafkaPublisher(config.KAFKA_BROKERS, config.KAFKA_EVENTS_TOPIC, topicLayout(config), logger)
    : noPublisher;
  // With Kafka, SET_RESOURCE and device observations go to the observations topic from every process,
  // so the engine process owning the thing's partition evaluates them.
  const observationsTopic = config.KAFKA_BROKERS
    ? kafkaIngest(config.KAFKA_BROKERS, config.KAFKA_OBSERVATIONS_TOPIC, topicLayout(config), logger)
    : undefined;
  // `ingest` is read at delivery time: the topic's producer, or the engine's once it runs.
  const ingest = () => services.ingest;
  const actions = new Outbox({
    db,
    logger,
    timers,
    concurrency: options.actionConcurrency,
    registry: metrics.registry,
    deps: { config, logger, mailer, ingest, events, publisher, timers },
  });
  const secret = jwtSecret(config.DMS_JWT_SECRET, config.DMS_DATA_DIR);
  const observationReader = new ObservationReader(db);
  const find = createFindRunner({
    file: db.name,
    reader: observationReader,
    threads: config.DMS_FIND_THREADS,
    budgetMs: config.DMS_FIND_TIMEOUT_MS,
  });
  const exports = createExports({
    db,
    reader: observationReader,
    registry,
    mailer,
    logger,
    clock,
    dataDir: config.DMS_DATA_DIR,
    signer,
    metrics: metrics.registry,
  });
  const documents = new JobDocuments(db, signer, clock);
  const jobs = new ThingJobs({ store: new SqliteJobStore(db), registry, bus, documents, clock, logger });
  // On the bus, so that the MQTT bridge hears of jobs changed by the REST or scheduler process.
  jobs.onPendingChanged((things) => bus.emit("jobs.pending", { things: [...things] }));
  const services: Services = {
    config,
    db,
    logger,
    metrics,
    bus,
    identity,
    tokens: new Tokens(secret, clock, db),
    registry,
    observations: new ObservationStore(db),
    signer,
    files: new Files(fileStore, signer, registry, identity),
    search,
    mailer,
    ruleStore,
    rules: new RulesService({
      store: ruleStore,
      bus,
      identity,
      registry,
      allowPrivateWebhooks: config.DMS_WEBHOOK_ALLOW_PRIVATE,
    }),
    actions,
    actionSink: actions,
    events,
    observationReader,
    find,
    exports,
    clock,
    jobs,
    ingest: observationsTopic?.ingest,
    readiness,
  };
  const provisioning = config.DMS_PROVISION ? readiness.register("provisioning", "not started") : undefined;
  const startup = readiness.register("components", "waiting for provisioning");

  const components: Component[] = [
    // Instant exports run in whichever process accepted them, so the runner stops with every process.
    { name: "export-runner", start: async () => {}, stop: () => exports.runner.stop() },
  ];
  // First in, so last to stop: the actions and the MQTT bridge may still produce while they stop.
  if (observationsTopic) {
    components.unshift({ name: "observations-producer", start: async () => {}, stop: () => observationsTopic.close() });
  }
  if (config.roles.has("scheduler")) {
    components.push(exports.scheduler);
    services.retention = new RetentionSweeper({
      db,
      targets: retentionTargets(config),
      clock,
      logger,
      registry: metrics.registry,
    });
    components.push(services.retention);
  }
  if (config.roles.has("actions")) {
    components.push({
      name: "actions",
      start: () => actions.start(),
      stop: async () => {
        await actions.stop();
        await publisher.close();
      },
    });
  }
  if (config.roles.has("engine")) {
    const engine = createEngineService({
      ...services,
      domainPath: (id) => identity.pathOf(id),
      // Late-bound, so a test can install another sink in `services.actionSink`.
      sink: { accept: (triggered) => (services.actionSink ?? actions).accept(triggered) },
      loadRules: () => ruleCache.all(),
    });
    services.engine = engine;
    services.ingest ??= engine.ingest;
    components.push({ name: "engine", start: () => engine.start(), stop: () => engine.stop() });
  }
  if (config.roles.has("scheduler")) {
    services.jobScheduler = new JobScheduler(jobs, logger, options.jobsPollMs);
    components.push(services.jobScheduler);
  }
  if (config.roles.has("mqtt")) {
    const device = new DeviceJobs(jobs);
    services.deviceBridge = new DeviceBridge({
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
      registry: services.metrics.registry,
    });
    components.push(services.deviceBridge);
  }
  // Device observations, decoded here once (a device speaks only for itself): to the topic with Kafka
  // (what the decode refused is a dead letter of this process), else to this process's engine (none: not taken).
  const engine = services.engine;
  const takeDevice = deviceIngest({
    topic: observationsTopic?.ingest,
    engine: engine?.accept,
    deadLetters: new DeadLetterStore(db),
    domainOf: (thingName) => registry.thing(thingName)?.domain,
    clock,
  });
  if (services.deviceBridge && takeDevice) {
    // In group commits: what devices publish while one batch is stored goes in the next, and the
    // bridge sends each QoS 1 PUBACK only once the commit holding its message resolved.
    const batches = new GroupCommit<readonly Ingested[]>(async (devices) => {
      await takeDevice(devices.flat());
    });
    services.deviceBridge.onObservations((thingName, payload) =>
      batches.add(decodeDevicePayload(thingName, payload, { source: "mqtt" })),
    );
  }
  if (config.roles.has("proxy")) {
    services.proxy = createProxy({ ...services, things: registry, authentication: authentication(services) });
    components.push(services.proxy);
  }

  const app = createApp(services, routeModules);
  const started: Component[] = [];
  let server: ServerType | undefined;
  let url: string | undefined;

  const close = async (): Promise<void> => {
    for (const c of started.reverse()) {
      await c.stop().catch((err: unknown) => logger.error({ err, component: c.name }, "stop failed"));
    }
    if (server) await new Promise<void>((resolve) => server!.close(() => resolve()));
    search.close();
    ruleCache.close();
    jobs.close();
    await find.close();
    relay?.stop();
    await checkpointer?.stop();
    db.close();
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

/** Objects live beside the database; an in-memory database gets a throw-away directory. */
function fileStoreDir(dataDir: string): string {
  return dataDir === ":memory:" ? mkdtempSync(join(tmpdir(), "dms-files-")) : join(dataDir, "files");
}

function listen(app: Api, hostname: string, port: number): Promise<ServerType> {
  return new Promise((resolve, reject) => {
    const server = serve({ fetch: app.fetch, hostname, port }, () => resolve(server));
    answerMalformedRequests(server as Server);
    server.once("error", reject);
  });
}
