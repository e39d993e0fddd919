import { SchemaRegistry } from "@kafkajs/confluent-schema-registry";
import { Counter, Gauge, Histogram } from "prom-client";
import type { ActionSink } from "./sink.js";
import type { EventBus } from "../bus/index.js";
import type { Config } from "../config/index.js";
import type { ObservationStore } from "../observations/index.js";
import type { Logger, Metrics } from "../observability/index.js";
import type { Rule } from "../rule-model/index.js";
import type { Db, Migration } from "../store/index.js";
import type { ThingRegistry } from "../things/index.js";
import { DeadLetterStore, deadLetterMigrations } from "./dead-letters.js";
import { decodeMessages, decodeValue, decodeWireMessages, type Ingested, type WireDecoder } from "./decode.js";
import { RuleEngine, type BatchResult } from "./engine.js";
import type { ObservationIngest } from "./ingest.js";
import type { ObservationSource } from "./source.js";
import { SqliteStateStore, stateMigrations } from "./state/index.js";
import { KafkaObservationSource } from "./sources/kafka.js";
import { resourceChecks, type ThingInfo } from "./things.js";

export const engineMigrations: Migration[] = [...stateMigrations, ...deadLetterMigrations];

export interface EngineDeps {
  config: Config;
  db: Db;
  logger: Logger;
  metrics: Metrics;
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
  /**
   * The embedded sources (`POST /observations`, the MQTT bridge without Kafka): decoded inputs,
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
  const { config, db, logger, bus, registry } = deps;
  const deadLetters = new DeadLetterStore(db);
  let ruleCount = (): number => 0;
  const counters = engineMetrics(deps.metrics, () => ruleCount());
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
    state: new SqliteStateStore(db),
    sink: deps.sink,
    observations: deps.observations,
    deadLetters,
    clock: deps.clock,
    onBatch: (result, letters) => {
      counters.observations.inc(result.accepted);
      counters.triggered.inc(result.triggered);
      for (const d of letters) counters.deadLetters.inc({ reason: d.reason });
    },
  });
  ruleCount = () => engine.ruleCount;

  const wire = config.SCHEMA_REGISTRY_URL ? wireDecoder(config.SCHEMA_REGISTRY_URL) : undefined;
  const timed = async (batch: readonly Ingested[]): Promise<BatchResult> => {
    const end = counters.batch.startTimer();
    try {
      return await engine.handle(batch);
    } finally {
      end();
    }
  };

  const unsubscribe: (() => void)[] = [];
  let kafka: ObservationSource | undefined;

  return {
    engine,
    deadLetters,
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
      if (config.KAFKA_BROKERS) {
        kafka = new KafkaObservationSource({
          brokers: config.KAFKA_BROKERS.split(","),
          topic: config.KAFKA_OBSERVATIONS_TOPIC,
          groupId: config.KAFKA_GROUP_ID,
          logger,
          // Engines sharing this data directory hand things over through the state table.
          onRebalance: () => {
            engine
              .resync()
              .catch((err: unknown) => logger.error({ err }, "engine state not re-read after a rebalance"));
          },
        });
        await kafka.start(async (batch) => {
          await timed(wire ? await decodeWireMessages(batch, wire) : decodeMessages(batch));
        });
      }
    },
    async stop() {
      await kafka?.stop();
      for (const off of unsubscribe.splice(0)) off();
    },
  };
}

function wireDecoder(host: string): WireDecoder {
  const registry = new SchemaRegistry({ host });
  return (value) => registry.decode(value) as Promise<unknown>;
}

function engineMetrics(metrics: Metrics, ruleCount: () => number) {
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
    batch: new Histogram({
      name: "dms_engine_batch_duration_seconds",
      help: "Time to store, evaluate and hand over one batch",
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1],
      registers,
    }),
  };
}
