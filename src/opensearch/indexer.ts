import { Kafka, logLevel, type Consumer } from "kafkajs";
import { Counter, Gauge, type Registry } from "prom-client";
import {
  deadLetter,
  observationId,
  resourceChecks,
  wrongTypeOf,
  type ChunkDecoder,
  type DeadLetter,
  type DeadLetterReason,
  type DeadLetterStore,
  type Ingested,
  type RawObservation,
} from "../engine/index.js";
import { ensureTopics, retryWithBackoff, type TopicLayout } from "../kafka/index.js";
import type { Logger } from "../observability/index.js";
import type { ReadinessCondition } from "../readiness/index.js";
import type { ThingRegistry } from "../things/index.js";
import type { BulkItem } from "./bulk.js";
import { BulkQueue } from "./bulk-queue.js";
import type { OpenSearchClient } from "./client.js";
import { bulkItem } from "./documents.js";
import type { IndexLayout } from "./indices.js";
import { refusalReason } from "./refusals.js";
import type { IndexTemplates } from "./templates.js";

export interface IndexerOptions {
  brokers: string;
  topic: string;
  /** The store role's own consumer group: it reads every observation, beside the engine's group. */
  groupId: string;
  topicLayout: TopicLayout;
  sessionTimeoutMs: number;
  heartbeatIntervalMs: number;
  client: OpenSearchClient;
  layout: IndexLayout;
  templates: IndexTemplates;
  /** Observations one `_bulk` carries at most, and a partition's chunk. */
  bulkSize: number;
  flushMs: number;
  /** The messages' decode, the engine's own (JSON, or the schema registry's wire format). */
  decode: ChunkDecoder;
  registry: Pick<ThingRegistry, "thing" | "thingType">;
  deadLetters: Pick<DeadLetterStore, "insertBatch">;
  clock: () => number;
  logger: Logger;
  /** Met once the consumer has joined its group; waiting while OpenSearch refuses `_bulk`. */
  readiness: ReadinessCondition;
  metrics: Registry;
}

/** Partitions whose batches are prepared at once: their documents share `_bulk` requests. */
const PARTITIONS_AT_ONCE = 6;

/**
 * The `store` role: consumes the observations topic in a consumer group of its own and indexes
 * each observation of a known thing into OpenSearch as the document the embedded store keeps,
 * under the id of its Kafka position (a replay indexes it again under the same id). A partition's
 * offset is committed only once every observation before it is indexed or is a dead letter: a
 * `_bulk` that fails is sent again with backoff while the consumer pauses, heartbeating meanwhile.
 * What the engine would refuse (not JSON, no thing name, an unknown thing, a resource of the wrong
 * type) and what OpenSearch refuses for good (a value its index maps otherwise) are dead letters
 * with their reason, their source `store:kafka:<topic>`.
 */
export class ObservationIndexer {
  private consumer: Consumer | undefined;
  private queue: BulkQueue | undefined;
  private consuming: Promise<unknown> | undefined;
  private stopping = false;
  private readonly checks = new Map<string, ReadonlyMap<string, (value: unknown) => boolean>>();
  private readonly counters: ReturnType<typeof indexerMetrics>;

  constructor(private readonly options: IndexerOptions) {
    this.counters = indexerMetrics(options.metrics);
  }

  /** A thing type changed: its resource checks are built again from the registry. */
  forgetType(thingType: string): void {
    this.checks.delete(thingType);
  }

  /** Joins the group and consumes, in the background: while Kafka cannot be reached it tries again with backoff. */
  async start(): Promise<void> {
    const o = this.options;
    this.stopping = false;
    const queue = new BulkQueue({
      client: o.client,
      maxItems: o.bulkSize,
      flushMs: o.flushMs,
      logger: o.logger,
      onFailing: (err) => {
        this.consumer?.pause([{ topic: o.topic }]);
        o.readiness.waiting(`OpenSearch refuses _bulk (${(err as Error).message}); consumer paused`);
      },
      onRecovered: () => {
        this.consumer?.resume([{ topic: o.topic }]);
        o.readiness.ready();
      },
    });
    this.queue = queue;
    o.readiness.waiting(`connecting to ${o.brokers}`);
    this.consuming = retryWithBackoff(
      async () => {
        await ensureTopics(o.brokers, [o.topic], o.topicLayout, o.logger);
        await this.consume(queue);
      },
      {
        logger: o.logger,
        what: `store role consumer of ${o.topic}`,
        stopped: () => this.stopping,
        onFailure: (err, attempt, next) =>
          o.readiness.waiting(`attempt ${attempt} failed (${(err as Error).message}); next in ${next} ms`),
      },
    );
  }

  async stop(): Promise<void> {
    this.stopping = true;
    // Documents waiting for OpenSearch fail their batches first: nothing past them is committed,
    // and the consumer's leave does not wait for a `_bulk` that may not come.
    await this.queue?.stop();
    await this.consumer?.disconnect();
    await this.consuming;
    // A start that got through meanwhile.
    await this.consumer?.disconnect();
    this.consumer = undefined;
    this.options.readiness.waiting("stopped");
  }

  private async consume(queue: BulkQueue): Promise<void> {
    const o = this.options;
    const kafka = new Kafka({ clientId: "dms-store", brokers: o.brokers.split(","), logLevel: logLevel.NOTHING });
    const consumer = kafka.consumer({
      groupId: o.groupId,
      maxBytes: 10 * 1024 * 1024,
      maxBytesPerPartition: 10 * 1024 * 1024,
      sessionTimeout: o.sessionTimeoutMs,
      heartbeatInterval: o.heartbeatIntervalMs,
    });
    this.consumer = consumer;
    consumer.on(consumer.events.GROUP_JOIN, () => o.readiness.ready());
    consumer.on(consumer.events.CRASH, (e) =>
      o.readiness.waiting(
        `consumer crashed (${e.payload.error.message}); ${e.payload.restart ? "restarting" : "stopped"}`,
      ),
    );
    try {
      await consumer.connect();
      await consumer.subscribe({ topic: o.topic, fromBeginning: true });
      const source = `kafka:${o.topic}`;
      await consumer.run({
        partitionsConsumedConcurrently: PARTITIONS_AT_ONCE,
        eachBatchAutoResolve: false,
        autoCommit: false,
        eachBatch: async ({ batch, resolveOffset, heartbeat, isRunning, isStale }) => {
          const { partition, messages } = batch;
          for (let start = 0; start < messages.length; start += o.bulkSize) {
            if (!isRunning() || isStale() || this.stopping) return;
            const chunk = messages.slice(start, start + o.bulkSize);
            const raws: RawObservation[] = chunk.map((m) => ({
              key: m.key ? m.key.toString("utf8") : null,
              value: m.value ?? Buffer.alloc(0),
              position: { source, partition, offset: m.offset },
            }));
            await this.indexChunk(raws, queue, heartbeat);
            const last = chunk[chunk.length - 1]!.offset;
            resolveOffset(last);
            await consumer.commitOffsets([{ topic: o.topic, partition, offset: String(Number(last) + 1) }]);
            this.counters.lag.set(
              { topic: o.topic, partition: String(partition) },
              Math.max(0, Number(batch.highWatermark) - Number(last) - 1),
            );
            await heartbeat();
          }
        },
      });
    } catch (err) {
      this.consumer = undefined;
      await consumer.disconnect().catch(() => {});
      throw err;
    }
    o.logger.info({ topic: o.topic, groupId: o.groupId }, "store role consuming");
  }

  /** Decodes, checks and indexes one chunk; resolves once each of its messages is indexed or a dead letter. */
  private async indexChunk(raws: RawObservation[], queue: BulkQueue, heartbeat: () => Promise<void>): Promise<void> {
    const o = this.options;
    const decoded = await o.decode(raws);
    const now = o.clock();
    const letters: DeadLetter[] = [];
    const items = new Map<BulkItem, { item: Ingested; thingName: string; thingType: string; domain: string }>();
    const refuse = (item: Ingested, reason: DeadLetterReason, message: string, thingName?: string, domain?: string) =>
      letters.push(deadLetter(item, reason, message, now, thingName, domain));
    for (const item of decoded) {
      const observation = item.observation;
      if (observation === undefined) {
        const name = item.refusal.thingName;
        refuse(item, item.refusal.reason, item.refusal.message, name, name && o.registry.thing(name)?.domain);
        continue;
      }
      const { thingName, timestamp, state, nested } = observation;
      const thing = o.registry.thing(thingName);
      if (thing === undefined) {
        refuse(item, "unknown-thing", `thing ${thingName} is not known`, thingName);
        continue;
      }
      const wrong = wrongTypeOf(state, this.checksOf(thing.thingType));
      if (wrong !== undefined) {
        refuse(item, "wrong-type", `state.${wrong} has the wrong type`, thingName, thing.domain);
        continue;
      }
      const document = { thingName, thingType: thing.thingType, domain: thing.domain, timestamp, state, nested };
      items.set(bulkItem(o.layout, observationId(item.position), document), {
        item,
        thingName,
        thingType: thing.thingType,
        domain: thing.domain,
      });
    }
    await o.templates.ensure(new Set([...items.values()].map((v) => v.thingType)));
    const refused = await whileHeartbeating(queue.add([...items.keys()]), heartbeat, o.heartbeatIntervalMs);
    for (const r of refused) {
      const { item, thingName, domain } = items.get(r.item)!;
      const { reason, message } = refusalReason(r);
      refuse(item, reason, message, thingName, domain);
    }
    if (letters.length > 0) {
      await o.deadLetters.insertBatch(letters.map((d) => ({ ...d, source: `store:${d.source}` })));
      for (const d of letters) this.counters.deadLetters.inc({ reason: d.reason });
    }
    this.counters.indexed.inc(items.size - refused.length);
  }

  private checksOf(thingType: string): ReadonlyMap<string, (value: unknown) => boolean> {
    let checks = this.checks.get(thingType);
    if (checks === undefined) {
      checks = resourceChecks(this.options.registry.thingType(thingType)?.resources ?? []);
      this.checks.set(thingType, checks);
    }
    return checks;
  }
}

/**
 * Waits for `work`, heartbeating every `intervalMs` meanwhile: a partition waiting for OpenSearch
 * keeps its place in the group. A heartbeat that fails (the group rebalances) ends the wait; the
 * documents still go to OpenSearch, and whoever reads the partition next indexes them again
 * under the same ids.
 */
async function whileHeartbeating<T>(work: Promise<T>, heartbeat: () => Promise<void>, intervalMs: number): Promise<T> {
  let settled = false;
  const done = work.finally(() => (settled = true));
  done.catch(() => undefined);
  while (!settled) {
    let timer: NodeJS.Timeout | undefined;
    const tick = new Promise<void>((resolve) => (timer = setTimeout(resolve, intervalMs)));
    await Promise.race([
      done.then(
        () => undefined,
        () => undefined,
      ),
      tick,
    ]);
    clearTimeout(timer);
    if (!settled) await heartbeat();
  }
  return done;
}

function indexerMetrics(registry: Registry) {
  const registers = [registry];
  return {
    indexed: new Counter({
      name: "dms_store_observations_indexed_total",
      help: "Observations the store role indexed into OpenSearch",
      registers,
    }),
    deadLetters: new Counter({
      name: "dms_store_dead_letters_total",
      help: "Messages the store role did not index, by reason",
      labelNames: ["reason"],
      registers,
    }),
    lag: new Gauge({
      name: "dms_store_consumer_lag",
      help: "Messages between the store role's position and the partition's high watermark, per partition it owns",
      labelNames: ["topic", "partition"],
      registers,
    }),
  };
}
