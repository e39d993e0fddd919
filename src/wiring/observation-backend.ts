import { topicLayout, type Config } from "../config/index.js";
import { streamDecoder } from "../engine/index.js";
import {
  createFindRunner,
  type ExportReader,
  type FindRunner,
  type ObservationStore,
  type OpenedObservations,
} from "../observations/index.js";
import { openSearchBackend, type OpenSearchBackendDeps } from "../opensearch/index.js";

/**
 * Where observations are kept and read, chosen once: the database (`stores.observations`), or
 * OpenSearch when `OPENSEARCH_URL` is set (docs/opensearch.md). Every part that writes or reads
 * observations takes its piece from here.
 */
export interface ObservationBackend {
  /** Every observation written through it is kept: tools, tests, counts and retention. */
  store: ObservationStore;
  /** Where the engine writes the observations it accepted. */
  engineStore: ObservationStore;
  /** What exports read. */
  reader: ExportReader;
  find: FindRunner;
  /** The `store` role's part, where the backend has one (OpenSearch with Kafka, in a process of that role). */
  storeRole: { name: string; start(): Promise<void>; stop(): Promise<void> } | undefined;
  close(): Promise<void>;
}

/** What the OpenSearch backend is made of, less what the configuration gives; and the database's observations. */
export type ObservationBackendDeps = Pick<
  OpenSearchBackendDeps,
  "registry" | "bus" | "deadLetters" | "logger" | "metrics" | "readiness" | "clock"
> & {
  /** The database's observations (also the embedded FIND's, which `/things/find` uses either way). */
  opened: OpenedObservations;
};

export function openObservationBackend(config: Config, deps: ObservationBackendDeps): ObservationBackend {
  const { opened } = deps;
  const embedded = createFindRunner({
    source: opened.source,
    reader: opened.reader,
    threads: config.DMS_FIND_THREADS,
    budgetMs: config.DMS_FIND_TIMEOUT_MS,
    columnCacheBytes: config.DMS_FIND_COLUMN_CACHE_MB * 1024 * 1024,
  });
  const url = config.OPENSEARCH_URL;
  if (url === undefined) {
    return {
      store: opened.store,
      engineStore: opened.store,
      reader: opened.reader,
      find: embedded,
      storeRole: undefined,
      close: () => embedded.close(),
    };
  }
  const brokers = config.KAFKA_BROKERS;
  const os = openSearchBackend({
    ...deps,
    settings: {
      url,
      prefix: config.OPENSEARCH_INDEX_PREFIX,
      period: config.OPENSEARCH_INDEX_PERIOD,
      replicas: config.OPENSEARCH_INDEX_REPLICAS,
      bulkSize: config.OPENSEARCH_BULK_SIZE,
      flushMs: config.OPENSEARCH_FLUSH_MS,
    },
    findBudgetMs: config.DMS_FIND_TIMEOUT_MS,
    findThreads: config.DMS_FIND_THREADS,
    things: embedded,
    topic:
      brokers && config.roles.has("store")
        ? {
            brokers,
            topic: config.KAFKA_OBSERVATIONS_TOPIC,
            groupId: `${config.KAFKA_GROUP_ID}-store`,
            topicLayout: topicLayout(config),
            sessionTimeoutMs: config.KAFKA_SESSION_TIMEOUT_MS,
            heartbeatIntervalMs: config.KAFKA_HEARTBEAT_INTERVAL_MS,
            decode: streamDecoder(config.SCHEMA_REGISTRY_URL),
          }
        : undefined,
  });
  const indexer = os.indexer;
  return {
    store: os.store,
    engineStore: os.engineStore,
    reader: os.reader,
    find: os.find,
    storeRole: indexer && { name: "opensearch-store", start: () => indexer.start(), stop: () => indexer.stop() },
    close: async () => {
      await os.find.close();
      await os.close();
    },
  };
}
