import { SchemaRegistry } from "@kafkajs/confluent-schema-registry";
import { Counter, Gauge, Histogram } from "prom-client";
import type { ActionSink } from "./sink.js";
import type { EventBus } from "../bus/index.js";
import { topicLayout, type Config } from "../config/index.js";
import { ensureTopics, retryWithBackoff } from "../kafka/index.js";
import type { ObservationStore } from "../observations/index.js";
import type { Logger, Metrics } from "../observability/index.js";
import type { Readiness, ReadinessCondition } from "../readiness/index.js";
import type { Rule } from "../rule-model/index.js";
import type { Migration } from "../store/index.js";
import type { ThingRegistry } from "../things/index.js";
import { deadLetterMigrations, type DeadLetterStore } from "./dead-letters/index.js";
import { decodeValue, type Ingested, type WireDecoder } from "./decode.js";
import { chunkDecoder, engineFeed, type ChunkDecoder } from "./feed.js";
import { RuleEngine, type BatchResult, type HandledBatch } from "./engine.js";
import type { ObservationIngest } from "./ingest.js";
import type { ObservationSource } from "./sources/source.js";
import { stateMigrations, type StateStore } from "./state/index.js";
import { HttpObservationSource } from "./sources/http.js";
import { KafkaObservationSource } from "./sources/kafka.js";
import { resourceChecks, type ThingInfo } from "./things.js";

export const engineMigrations: Migration[] = [...stateMigrations, ...deadLetterMigrations];

export interface EngineDeps {
  config: Config;
  /** Where observations the decode or the engine refused are kept. */
  deadLetters: DeadLetterStore;
  /** The engine's thing and threshold state, checkpointed every `DMS_ENGINE_CHECKPOINT_MS`. */
  state: StateStore;
  logger: Logger;
  metrics: Metrics;
  /** The Kafka consumer declares itself here: not ready until it has joined its group. */
  readiness: Readiness;
  bus: EventBus;
  registry: ThingRegistry;
  /** `path` of a domain, `root/<sub>/...`: a thing's rules are those filtered on its domain or above. */
  domainPath: (id: string) => string | undefined;
  observations: ObservationStore;
  sink: ActionSink;
  clock: () => number;
  loadRules: () => Rule[];
}

export interface EngineService {
  engine: RuleEngine;
  deadLetters: DeadLetterStore;
  /** `POST /observations`, started with the engine. */
  http: HttpObservationSource;
  /**
   * The MQTT bridge without Kafka: decoded inputs,
   * refusals included (they become dead letters). Resolves once stored and evaluated, with the rejects.
   */
  accept(batch: readonly Ingested[]): Promise<BatchResult>;
  /** SET_RESOURCE without Kafka (with Kafka it goes to the observations topic). Resolves once stored and evaluated. */
  ingest: ObservationIngest;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** The engine component: the loop, its state and dead letters, the Kafka source when `KAFKA_BROKERS` is set. */
export function createEngineService(deps: EngineDeps): EngineService {
  const { config, logger, bus, registry, deadLetters, state } = deps;
  let ruleCount = (): number => 0;
  const counters = engineMetrics(
    deps.metrics,
    () => ruleCount(),
    () => deadLetters.count(),
  );
  const checksByType = new Map<string, ThingInfo["checks"]>();

  const resolveThing = (thingName: string): ThingInfo | undefined => {
    const thing = registry.thing(thingName);
    if (!thing) return undefined;
    let checks = checksByType.get(thing.thingType);
    if (!checks) {
      checks = resourceChecks(registry.thingType(thing.thingType)?.resources ?? []);
      checksByType.set(thing.thingType, checks);
    }
    const path = deps.domainPath(thing.domain) ?? thing.domain;
    return {
      thingName,
      thingType: thing.thingType,
      domain: thing.domain,
      domains: new Set(path.split("/")),
      checks,
    };
  };

  const engine = new RuleEngine({
    resolveThing,
    state,
    sink: deps.sink,
    observations: deps.observations,
    deadLetters,
    clock: deps.clock,
    checkpointMs: config.DMS_ENGINE_CHECKPOINT_MS,
    onBatch: (result, letters) => {
      counters.observations.inc(result.accepted);
      counters.triggered.inc(result.triggered);
      for (const d of letters) counters.deadLetters.inc({ reason: d.reason });
    },
  });
  ruleCount = () => engine.ruleCount;

  const decode = streamDecoder(config.SCHEMA_REGISTRY_URL);
  const timed = async (batch: readonly Ingested[]): Promise<HandledBatch> => {
    const end = counters.batch.startTimer();
    try {
      const result = await engine.handle(batch);
      // A source hands over batches of its own: the first item names it.
      counters.ingested.inc({ source: batch[0]?.position.source ?? "none" }, batch.length);
      return result;
    } finally {
      end();
    }
  };

  const http = new HttpObservationSource();
  const unsubscribe: (() => void)[] = [];
  let kafka: ObservationSource | undefined;
  let stopping = false;
  let consuming: Promise<unknown> | undefined;
  let kafkaReady: ReadinessCondition | undefined;

  /**
   * Creates the topic when missing, joins the group and consumes; while the brokers cannot be
   * reached (or the topic has no leader yet) it tries again with backoff, in the background:
   * the rest of the service runs meanwhile, and `/readyz` says what the consumer waits for.
   */
  const startKafka = (brokers: string): void => {
    const topic = config.KAFKA_OBSERVATIONS_TOPIC;
    kafkaReady ??= deps.readiness.register(`kafka:${topic}`, `connecting to ${brokers}`);
    const condition = kafkaReady;
    condition.waiting(`connecting to ${brokers}`);
    const setReady = (ready: boolean, detail: string): void => (ready ? condition.ready() : condition.waiting(detail));
    const source = new KafkaObservationSource({
      brokers: brokers.split(","),
      topic,
      groupId: config.KAFKA_GROUP_ID,
      sessionTimeoutMs: config.KAFKA_SESSION_TIMEOUT_MS,
      heartbeatIntervalMs: config.KAFKA_HEARTBEAT_INTERVAL_MS,
      logger,
      // Engines sharing this data directory hand things over through the state table.
      onRebalance: () => {
        setReady(true, "consuming");
        counters.lag.reset();
        engine.resync().catch((err: unknown) => logger.error({ err }, "engine state not re-read after a rebalance"));
      },
      onCrash: (err, restart) =>
        setReady(false, `consumer crashed (${err.message}); ${restart ? "restarting" : "not restarting"}`),
      onLag: (partition, lag) => counters.lag.set({ topic, partition: String(partition) }, lag),
      checkpoint: () => engine.checkpoint(),
    });
    kafka = source;
    consuming = retryWithBackoff(
      async () => {
        await ensureTopics(brokers, [topic], topicLayout(config), logger);
        setReady(false, "joining the consumer group");
        await source.start(engineFeed(decode, timed));
      },
      {
        logger,
        what: `kafka source ${topic}`,
        stopped: () => stopping,
        onFailure: (err, attempt, next) =>
          setReady(false, `attempt ${attempt} failed (${(err as Error).message}); next in ${next} ms`),
      },
    );
  };

  return {
    engine,
    deadLetters,
    http,
    accept: timed,
    ingest: async (observations, source) => {
      const result = await timed(observations.map((o) => decodeValue(o, { source })));
      if (result.rejected.length > 0)
        logger.warn({ source, rejected: result.rejected }, "ingested observations rejected");
    },
    async start() {
      const errors = engine.load(deps.loadRules());
      for (const e of errors) logger.error(e, "rule does not compile; skipped");
      unsubscribe.push(
        bus.follow("rule.changed", ({ id, rule }) => {
          try {
            engine.apply(id, rule);
          } catch (err) {
            logger.error({ err, ruleId: id }, "rule does not compile; the engine dropped it");
            engine.apply(id, null);
          }
        }),
        bus.follow("thing.changed", ({ thingName }) => engine.forgetThing(thingName)),
        bus.follow("thingType.changed", ({ id }) => {
          checksByType.delete(id);
          engine.forgetThing();
        }),
        bus.follow("domain.changed", () => engine.forgetThing()),
      );
      stopping = false;
      await http.start(timed);
      if (config.KAFKA_BROKERS) startKafka(config.KAFKA_BROKERS);
    },
    async stop() {
      stopping = true;
      // Disconnecting ends a start under way (it fails and is not retried); a start that got through
      // meanwhile is stopped by the second call.
      await kafka?.stop();
      await consuming;
      await kafka?.stop();
      await http.stop();
      // Every batch handed over is done: a last checkpoint, then a writer thread ends (a start after this makes another).
      await engine.close();
      await state.close?.();
      kafkaReady?.waiting("stopped");
      for (const off of unsubscribe.splice(0)) off();
    },
  };
}

/** How a stream's messages are decoded: JSON, or with a schema registry its wire format too. */
export function streamDecoder(schemaRegistryUrl: string | undefined): ChunkDecoder {
  return chunkDecoder(schemaRegistryUrl ? wireDecoder(schemaRegistryUrl) : undefined);
}

function wireDecoder(host: string): WireDecoder {
  const registry = new SchemaRegistry({ host });
  return (value) => registry.decode(value) as Promise<unknown>;
}

function engineMetrics(metrics: Metrics, ruleCount: () => number, deadLetterCount: () => Promise<number>) {
  const registers = [metrics.registry];
  return {
    observations: new Counter({
      name: "dms_engine_observations_total",
      help: "Observations stored and evaluated",
      registers,
    }),
    deadLetters: new Counter({
      name: "dms_engine_dead_letters_total",
      help: "Messages the engine could not evaluate, by reason",
      labelNames: ["reason"],
      registers,
    }),
    storedDeadLetters: new Gauge({
      name: "dms_engine_dead_letters",
      help: "Dead letters kept in the store (bounded by DMS_DEAD_LETTER_RETENTION)",
      registers,
      async collect() {
        this.set(await deadLetterCount());
      },
    }),
    triggered: new Counter({
      name: "dms_engine_rules_triggered_total",
      help: "Rule triggerings (each hands the rule's actions to the outbox)",
      registers,
    }),
    rules: new Gauge({
      name: "dms_engine_rules",
      help: "Enabled rules compiled in the engine",
      registers,
      collect() {
        this.set(ruleCount());
      },
    }),
    ingested: new Counter({
      name: "dms_ingest_observations_total",
      help: "Observations handed to the engine, by source (kafka:<topic>, http, mqtt, set-resource)",
      labelNames: ["source"],
      registers,
    }),
    lag: new Gauge({
      name: "dms_kafka_consumer_lag",
      help: "Messages between this engine's position and the partition's high watermark, per partition it owns",
      labelNames: ["topic", "partition"],
      registers,
    }),
    batch: new Histogram({
      name: "dms_engine_batch_duration_seconds",
      help: "Time to store, evaluate and hand over one batch",
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1],
      registers,
    }),
  };
}
