import type { EventBus } from "../bus/index.js";
import type { ChunkDecoder, DeadLetterStore } from "../engine/index.js";
import type { TopicLayout } from "../kafka/index.js";
import type { ExportReader, FindRunner, ObservationStore } from "../observations/index.js";
import type { Logger } from "../observability/index.js";
import type { Readiness } from "../readiness/index.js";
import type { ThingRegistry } from "../things/index.js";
import type { Registry } from "prom-client";
import { BulkQueue } from "./bulk-queue.js";
import { OpenSearchClient } from "./client.js";
import { openSearchFind } from "./find.js";
import { ObservationIndexer } from "./indexer.js";
import type { IndexLayout, IndexPeriod } from "./indices.js";
import { OpenSearchExportReader } from "./reader.js";
import { OpenSearchObservationStore } from "./store.js";
import { IndexTemplates } from "./templates.js";

/** Where and how observations are kept in OpenSearch (`OPENSEARCH_*`). */
export interface OpenSearchSettings {
  url: string;
  prefix: string;
  period: IndexPeriod;
  replicas: number;
  bulkSize: number;
  flushMs: number;
}

/** The observations topic the store role reads, when Kafka is on. */
export interface StoreRoleTopic {
  brokers: string;
  topic: string;
  groupId: string;
  topicLayout: TopicLayout;
  sessionTimeoutMs: number;
  heartbeatIntervalMs: number;
  /** The engine's decode of a chunk of messages. */
  decode: ChunkDecoder;
}

export interface OpenSearchBackendDeps {
  settings: OpenSearchSettings;
  registry: ThingRegistry;
  bus: EventBus;
  deadLetters: DeadLetterStore;
  logger: Logger;
  metrics: Registry;
  readiness: Readiness;
  clock: () => number;
  /** FIND's budget (`DMS_FIND_TIMEOUT_MS`). */
  findBudgetMs: number;
  /** Threads that plan FIND requests (`DMS_FIND_THREADS`). */
  findThreads: number;
  /** The embedded runner, which still searches the registry's documents (`/things/find`). */
  things: FindRunner;
  /** Absent without Kafka: the engine then indexes every observation itself. */
  topic: StoreRoleTopic | undefined;
}

/** Observations in OpenSearch: what the service reads and writes them through. */
export interface OpenSearchBackend {
  /** Indexes every observation written through it (tools, tests); retention and counts. */
  store: ObservationStore;
  /** The engine's store: indexes what no stream replays, and leaves the topic's to the store role. */
  engineStore: ObservationStore;
  reader: ExportReader;
  find: FindRunner;
  /** The `store` role: the topic's consumer that indexes it; undefined without Kafka. */
  indexer: ObservationIndexer | undefined;
  close(): Promise<void>;
}

export function openSearchBackend(deps: OpenSearchBackendDeps): OpenSearchBackend {
  const { settings, registry, bus, deadLetters, logger, clock } = deps;
  const client = new OpenSearchClient(settings.url);
  const layout: IndexLayout = { prefix: settings.prefix, period: settings.period };
  const templates = new IndexTemplates({
    client,
    layout,
    replicas: settings.replicas,
    resourcesOf: (t) => registry.thingType(t)?.resources ?? [],
    logger,
  });
  // The writes a caller reads back at once (a test, POST /observations) are searchable when they resolve.
  const queue = new BulkQueue({
    client,
    maxItems: settings.bulkSize,
    flushMs: 0,
    refresh: "wait_for",
    logger,
  });
  const store = (indexStreamRows: boolean): OpenSearchObservationStore =>
    new OpenSearchObservationStore({ client, layout, templates, queue, deadLetters, clock, indexStreamRows });
  const topic = deps.topic;
  const indexer = topic
    ? new ObservationIndexer({
        ...topic,
        client,
        layout,
        templates,
        bulkSize: settings.bulkSize,
        flushMs: settings.flushMs,
        registry,
        deadLetters,
        clock,
        logger,
        readiness: deps.readiness.register(`opensearch-store:${topic.topic}`, "not started"),
        metrics: deps.metrics,
      })
    : undefined;
  const unfollow = bus.follow("thingType.changed", ({ id, change }) => {
    indexer?.forgetType(id);
    if (change !== "deleted")
      templates.changed(id).catch((err: unknown) => logger.warn({ err, thingType: id }, "index template not updated"));
  });
  return {
    store: store(true),
    engineStore: store(false),
    reader: new OpenSearchExportReader(client, layout),
    find: openSearchFind({
      client,
      layout,
      budgetMs: deps.findBudgetMs,
      planThreads: deps.findThreads,
      things: deps.things,
    }),
    indexer,
    close: async () => {
      unfollow();
      await queue.stop();
    },
  };
}
