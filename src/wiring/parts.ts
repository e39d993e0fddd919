import type { ActionSink, Outbox } from "../actions/index.js";
import type { EventBus } from "../bus/index.js";
import type { Config } from "../config/index.js";
import {
  createEngineService,
  deviceIngest,
  MqttObservationSource,
  type DeadLetterStore,
  type EngineService,
  type ObservationIngest,
} from "../engine/index.js";
import { DeviceJobs, JobScheduler, type ThingJobs } from "../jobs/index.js";
import { DeviceBridge } from "../mqtt/index.js";
import type { Logger, Metrics } from "../observability/index.js";
import { createProxy, type Proxy } from "../proxy/index.js";
import { retentionTargets } from "../retention.js";
import { RuleCache } from "../rules/index.js";
import { RetentionSweeper } from "../store/index.js";
import { CredentialsBusyError, type ThingRegistry } from "../things/index.js";
import type { Capabilities } from "./capabilities.js";
import type { Component, StartOptions } from "./types.js";

/** What the roles of `DMS_ROLES` add to the capabilities, and the components to start in order. */
export interface Parts {
  /** Every rule in memory, for the engine. */
  readonly ruleCache: RuleCache | undefined;
  readonly engine: EngineService | undefined;
  /** Where SET_RESOURCE observations go: the observations topic with Kafka, else this process's engine. */
  readonly ingest: ObservationIngest | undefined;
  readonly retention: RetentionSweeper | undefined;
  readonly jobScheduler: JobScheduler | undefined;
  readonly deviceBridge: DeviceBridge | undefined;
  readonly proxy: Proxy | undefined;
  /** Started in this order, stopped in the reverse one. */
  readonly components: Component[];
}

/** Step two of `startDms`: the parts each role of `DMS_ROLES` adds, made from the capabilities. */
export async function partsForRoles(config: Config, options: StartOptions, capabilities: Capabilities): Promise<Parts> {
  const { roles } = config;
  const {
    stores,
    logger,
    metrics,
    readiness,
    bus,
    registry,
    observationBackend,
    clock,
    identity,
    actions,
    rules,
    jobs,
    observationsTopic,
    authenticate,
    exports,
    publisher,
  } = capabilities;
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
          observations: observationBackend.engineStore,
          clock,
          domainPath: (id) => identity.pathOf(id),
          sink: actionSink(options, actions),
          loadRules: () => ruleCache.all(),
        })
      : undefined;
  const ingest: ObservationIngest | undefined = observationsTopic?.ingest ?? engine?.ingest;

  const retention = roles.has("scheduler")
    ? new RetentionSweeper({
        targets: retentionTargets(config, { ...stores, observations: observationBackend }),
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

  capabilities.setResourceFeed.ingest = ingest;

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
    // Role `store` (with OpenSearch and Kafka): indexes the observations topic.
    ...(observationBackend.storeRole ? [observationBackend.storeRole] : []),
    ...(jobScheduler ? [jobScheduler] : []),
    // The source before the bridge and stopped after it: no publish finds it not taking yet, or gone.
    ...(mqtt?.source ? [mqtt.source] : []),
    ...(deviceBridge ? [deviceBridge] : []),
    ...(proxy ? [proxy] : []),
  ];

  return { ruleCache, engine, ingest, retention, jobScheduler, deviceBridge, proxy, components };
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
