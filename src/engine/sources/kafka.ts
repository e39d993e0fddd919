import { Kafka, logLevel, type Consumer } from "kafkajs";
import type { Logger } from "../../observability/index.js";
import type { ObservationSource } from "./source.js";
import type { RawObservation } from "../types.js";

export interface KafkaSourceOptions {
  brokers: string[];
  topic: string;
  groupId: string;
  clientId?: string;
  /** Where a new group starts; the service starts at the beginning so nothing produced before it is lost. */
  fromBeginning?: boolean;
  /** Messages handed to the engine at once; the consumer heartbeats between chunks of a long batch. */
  chunkSize?: number;
  logger?: Logger;
  /** Called each time the consumer (re)joins its group: its partitions may have changed hands. */
  onRebalance?: () => void;
  /** The consumer crashed; kafkajs restarts it when the error is retriable (`restart`). */
  onCrash?: (err: Error, restart: boolean) => void;
  /**
   * After each chunk handed over: how far behind the partition's high watermark
   * the consumer is, in messages (the `/metrics` consumer lag).
   */
  onLag?: (partition: number, lag: number) => void;
}

/** Chunks handed to the engine before the first of them is handled (see `eachBatch`). */
const CHUNKS_IN_FLIGHT = 3;

/**
 * The Kafka source: a kafkajs consumer group reading with `eachBatch`.
 * Offsets are resolved only after the engine's `handle` resolves for a chunk
 * (stored, actions in the outbox, state durable) and committed from there,
 * so a crash replays what was not handed over and skips nothing.
 */
export class KafkaObservationSource implements ObservationSource {
  readonly name: string;
  private consumer: Consumer | undefined;
  private joined!: () => void;
  /** Resolves once the consumer has joined its group and has partitions: what it will read from now on. */
  readonly ready = new Promise<void>((resolve) => (this.joined = resolve));

  constructor(private readonly options: KafkaSourceOptions) {
    this.name = `kafka:${options.topic}`;
  }

  async start(handle: (batch: readonly RawObservation[]) => Promise<void>): Promise<void> {
    const { brokers, topic, groupId, logger } = this.options;
    const chunkSize = this.options.chunkSize ?? 5000;
    const kafka = new Kafka({ clientId: this.options.clientId ?? "dms-engine", brokers, logLevel: logLevel.NOTHING });
    const consumer = kafka.consumer({ groupId, maxBytes: 10 * 1024 * 1024 });
    this.consumer = consumer;
    consumer.on(consumer.events.GROUP_JOIN, () => {
      this.options.onRebalance?.();
      this.joined();
    });
    consumer.on(consumer.events.CRASH, (e) => this.options.onCrash?.(e.payload.error, e.payload.restart));
    try {
      await this.consume(consumer, handle, chunkSize);
    } catch (err) {
      // A start that failed half-way (connected, topic missing) leaves nothing behind to retry over.
      this.consumer = undefined;
      await consumer.disconnect().catch(() => {});
      throw err;
    }
    logger?.info({ topic, groupId }, "kafka source consuming");
  }

  private async consume(
    consumer: Consumer,
    handle: (batch: readonly RawObservation[]) => Promise<void>,
    chunkSize: number,
  ): Promise<void> {
    const { topic, onLag } = this.options;
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: this.options.fromBeginning ?? true });
    const source = this.name;
    await consumer.run({
      eachBatchAutoResolve: false,
      autoCommit: true,
      eachBatch: async ({ batch, resolveOffset, heartbeat, commitOffsetsIfNecessary, isRunning, isStale }) => {
        const messages = batch.messages;
        // Reported before handling too, so a consumer stuck on a failing batch shows its lag grow.
        if (messages.length > 0) onLag?.(batch.partition, Number(batch.highWatermark) - Number(messages[0]!.offset));
        // Chunks in flight at once: the engine evaluates one while the store writes the one before.
        // Offsets are resolved in order, each once its chunk is handled (stored, actions in the
        // outbox, state durable).
        const inFlight: { handled: Promise<void>; last: string }[] = [];
        const settleOldest = async (): Promise<void> => {
          const { handled, last } = inFlight.shift()!;
          await handled;
          resolveOffset(last);
          onLag?.(batch.partition, Math.max(0, Number(batch.highWatermark) - Number(last) - 1));
          await heartbeat();
        };
        try {
          for (let start = 0; start < messages.length; start += chunkSize) {
            if (!isRunning() || isStale()) break;
            const chunk = messages.slice(start, start + chunkSize);
            const raws: RawObservation[] = chunk.map((m) => ({
              key: m.key ? m.key.toString("utf8") : null,
              value: m.value ?? Buffer.alloc(0),
              position: { source, partition: batch.partition, offset: m.offset },
            }));
            const handled = handle(raws);
            // Awaited in order below; a failure of a later chunk while an earlier one is awaited is not unhandled.
            handled.catch(() => undefined);
            inFlight.push({ handled, last: chunk[chunk.length - 1]!.offset });
            if (inFlight.length >= CHUNKS_IN_FLIGHT) await settleOldest();
          }
          while (inFlight.length > 0) await settleOldest();
        } finally {
          // A failed chunk fails the batch: the chunks after it are not resolved, and are handed over again.
          inFlight.length = 0;
        }
        await commitOffsetsIfNecessary();
      },
    });
  }

  async stop(): Promise<void> {
    await this.consumer?.disconnect();
    this.consumer = undefined;
  }
}
