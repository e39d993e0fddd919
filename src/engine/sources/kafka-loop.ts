import { Kafka, logLevel, type Consumer } from "kafkajs";
import type { RawObservation } from "../types.js";

/** What the consumer loop logs through: the service's logger, or on a fetch thread a message to it. */
export interface SourceLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  debug(obj: object, msg: string): void;
}

export interface KafkaLoopOptions {
  brokers: string[];
  topic: string;
  groupId: string;
  clientId?: string;
  /** Where a new group starts; the service starts at the beginning so nothing produced before it is lost. */
  fromBeginning?: boolean;
  /** Messages handed to the engine at once; the consumer heartbeats between chunks of a long batch. */
  chunkSize?: number;
  /**
   * Partitions of one fetch handed to the engine at once (kafkajs's `partitionsConsumedConcurrently`):
   * a partition's chunks do not wait for another's to be stored, and the engine still gets each
   * partition's in order.
   */
  partitionsAtOnce?: number;
  /**
   * How long the group waits for a silent member before its partitions move (kafkajs's
   * `sessionTimeout`): the bound on failover after a node dies. The broker's
   * `group.min.session.timeout.ms` (6 s by default) is the floor.
   */
  sessionTimeoutMs?: number;
  /** How often the consumer tells the group it lives; a third of the session or less. */
  heartbeatIntervalMs?: number;
  logger?: SourceLog | undefined;
  /** Called each time the consumer (re)joins its group: its partitions may have changed hands. */
  onRebalance?: () => void;
  /** The consumer crashed; kafkajs restarts it when the error is retriable (`restart`). */
  onCrash?: (err: Error, restart: boolean) => void;
  /**
   * After each chunk handed over: how far behind the partition's high watermark
   * the consumer is, in messages (the `/metrics` consumer lag).
   */
  onLag?: (partition: number, lag: number) => void;
  /** A checkpoint covering every chunk handed over so far (the engine's `checkpoint`): taken on stop, so that the commits go that far. */
  checkpoint?: () => Promise<void>;
  /** An offset committed (the offset of the next message to read), for tests. */
  onCommit?: (partition: number, offset: string) => void;
}

/** What handling a chunk resolves with: when its state is durable (absent: once handled). */
export type Handled = { checkpointed?: Promise<void> } | void;
export type KafkaHandler = (batch: readonly RawObservation[]) => Promise<Handled>;

/**
 * The group is rebalancing and this member's generation is still current, so the broker takes its
 * commits (kafkajs's `isRebalancing` also counts a lost coordinator or generation, where it does not).
 */
function rebalancing(err: unknown): boolean {
  const type = (err as { type?: unknown } | null)?.type;
  return type === "REBALANCE_IN_PROGRESS";
}

/**
 * The wait after a partition's chunk failed before it is read again, doubled for each failure in a
 * row up to the cap: a store that does not answer (the database away) is asked a few times a
 * second at first, then every few seconds, instead of in a tight loop. Below the broker's smallest
 * session timeout, and the consumer heartbeats while it waits.
 */
const FAILED_WAIT_MS = 100;
const FAILED_WAIT_MAX_MS = 5000;
/** Chunks handed to the engine before the first of them is handled (see `eachBatch`). */
const CHUNKS_IN_FLIGHT = 3;
/** Default of `KafkaLoopOptions.partitionsAtOnce`. */
const PARTITIONS_AT_ONCE = 6;

/**
 * The Kafka source's consumer loop: a kafkajs consumer group reading with `eachBatch`.
 * A chunk's offsets are resolved once the engine's `handle` resolves for it
 * (actions in the outbox, rows stored), so the fetch moves on, and committed
 * only once a checkpoint covering the chunk is durable (`checkpointed`), in
 * order per partition: a crash replays from the committed offset, and the
 * state table already counts at least everything before it. A chunk that
 * fails, or a checkpoint that does not come (the engine went back to the last
 * one), sends the partition back to its committed offset; after a failed chunk
 * the partition is read again only after a wait that grows while chunks keep
 * failing (a database away), so that consuming pauses and resumes by itself.
 */
export class KafkaConsumerLoop {
  readonly name: string;
  private consumer: Consumer | undefined;
  private joined!: () => void;
  /** Resolves once the consumer has joined its group and has partitions: what it will read from now on. */
  readonly ready = new Promise<void>((resolve) => (this.joined = resolve));
  /** Per partition: the offset committed last (or where this generation started reading it). */
  private readonly committed = new Map<number, string>();
  /** Per partition: the commits in order. */
  private readonly commits = new Map<number, Promise<void>>();
  /** Per partition: seeks back so far (see `goBack`). */
  private readonly epochs = new Map<number, number>();
  /** Per partition: chunks that failed in a row (see `FAILED_WAIT_MS`). */
  private readonly failures = new Map<number, number>();

  constructor(private readonly options: KafkaLoopOptions) {
    this.name = `kafka:${options.topic}`;
  }

  async start(handle: KafkaHandler): Promise<void> {
    const { brokers, topic, groupId, logger } = this.options;
    const chunkSize = this.options.chunkSize ?? 5000;
    const kafka = new Kafka({ clientId: this.options.clientId ?? "dms-engine", brokers, logLevel: logLevel.NOTHING });
    // A partition's fetch up to the whole fetch's 10 MiB, not kafkajs's 1 MiB: each fetched batch
    // ends with its chunks in flight settled (stored, in the sink), so small batches would make the
    // engine wait for the store often.
    const consumer = kafka.consumer({
      groupId,
      maxBytes: 10 * 1024 * 1024,
      maxBytesPerPartition: 10 * 1024 * 1024,
      ...(this.options.sessionTimeoutMs !== undefined && { sessionTimeout: this.options.sessionTimeoutMs }),
      ...(this.options.heartbeatIntervalMs !== undefined && { heartbeatInterval: this.options.heartbeatIntervalMs }),
    });
    this.consumer = consumer;
    consumer.on(consumer.events.GROUP_JOIN, () => {
      // The assignment starts at the group's committed offsets.
      this.committed.clear();
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

  private async consume(consumer: Consumer, handle: KafkaHandler, chunkSize: number): Promise<void> {
    const { topic, onLag } = this.options;
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: this.options.fromBeginning ?? true });
    const source = this.name;
    await consumer.run({
      partitionsConsumedConcurrently: this.options.partitionsAtOnce ?? PARTITIONS_AT_ONCE,
      eachBatchAutoResolve: false,
      // Offsets are committed once a checkpoint covers them (`commit`), not as they are resolved.
      autoCommit: false,
      eachBatch: async ({ batch, resolveOffset, heartbeat, isRunning, isStale }) => {
        const messages = batch.messages;
        const partition = batch.partition;
        if (messages.length === 0) return;
        // The consumer fetched from the group's committed offset: until this engine commits, that is
        // where a partition goes back to.
        if (!this.committed.has(partition)) this.committed.set(partition, messages[0]!.offset);
        const epoch = this.epochOf(partition);
        // Reported before handling too, so a consumer stuck on a failing batch shows its lag grow.
        onLag?.(partition, Number(batch.highWatermark) - Number(messages[0]!.offset));
        // Chunks in flight at once: the engine evaluates one while the store writes the one before.
        // Offsets are resolved in order, each once its chunk is handled (actions in the sink, rows
        // stored), so that the fetch moves on; committed once a checkpoint covers the chunk.
        const inFlight: { handled: Promise<Handled>; last: string }[] = [];
        const settleOldest = async (beat = true): Promise<void> => {
          const { handled, last } = inFlight.shift()!;
          const { checkpointed } = (await handled) ?? {};
          // A seek since (this or another chunk failed): the fetch starts over there, nothing here counts.
          if (this.epochOf(partition) !== epoch) return;
          this.failures.delete(partition);
          resolveOffset(last);
          const next = String(Number(last) + 1);
          if (checkpointed === undefined) this.commit(consumer, partition, next);
          else
            checkpointed.then(
              () => this.commit(consumer, partition, next),
              (err: unknown) => this.goBack(consumer, partition, epoch, err),
            );
          onLag?.(partition, Math.max(0, Number(batch.highWatermark) - Number(last) - 1));
          if (beat) await heartbeat();
        };
        try {
          for (let start = 0; start < messages.length; start += chunkSize) {
            if (!isRunning() || isStale() || this.epochOf(partition) !== epoch) break;
            const chunk = messages.slice(start, start + chunkSize);
            const raws: RawObservation[] = chunk.map((m) => ({
              key: m.key ? m.key.toString("utf8") : null,
              value: m.value ?? Buffer.alloc(0),
              position: { source, partition, offset: m.offset, epoch },
            }));
            const handled = handle(raws);
            // Awaited in order below; a failure of a later chunk while an earlier one is awaited is not unhandled.
            handled.catch(() => undefined);
            inFlight.push({ handled, last: chunk[chunk.length - 1]!.offset });
            if (inFlight.length >= CHUNKS_IN_FLIGHT) await settleOldest();
          }
          while (inFlight.length > 0) await settleOldest();
        } catch (err) {
          if (rebalancing(err) && this.epochOf(partition) === epoch) {
            // The heartbeat says the group is rebalancing: this consumer still owns its partitions
            // until it joins again, which kafkajs does once this handler throws. Before that, what
            // was handed over is checkpointed and committed, so the next owner (or this one, after
            // `resync`) goes on from there instead of replaying everything since the last checkpoint.
            await this.handOver(inFlight, settleOldest);
            throw err;
          }
          // A failed chunk: the engine went back to its last checkpoint, so the partition goes back to
          // its committed offset (no checkpoint has passed it), not merely to the failed chunk.
          this.goBack(consumer, partition, epoch, err);
          await this.waitAfterFailure(partition, heartbeat, isRunning);
        } finally {
          inFlight.length = 0;
        }
      },
    });
  }

  /**
   * The group is rebalancing (eager protocol: every member gives its partitions up and joins again):
   * settles the chunks still in flight, takes a checkpoint covering every chunk handed over
   * (`checkpoint`) and waits for the commits it allows. A commit the broker refuses, or a
   * checkpoint that fails, leaves things as they were without it: the next owner starts at the
   * offset committed before, which the checkpoints cover too. Without `checkpoint` only the chunks
   * in flight are settled.
   */
  private async handOver(inFlight: readonly unknown[], settleOldest: (beat: boolean) => Promise<void>): Promise<void> {
    try {
      while (inFlight.length > 0) await settleOldest(false);
      await this.options.checkpoint?.();
      await Promise.all(this.commits.values());
    } catch (err) {
      this.options.logger?.warn({ err, topic: this.options.topic }, "no checkpoint before the rebalance");
    }
  }

  /**
   * Waits before the partition is read again after a failed chunk, longer for each failure in a
   * row, heartbeating meanwhile so that the group keeps the partition here.
   */
  private async waitAfterFailure(
    partition: number,
    heartbeat: () => Promise<void>,
    isRunning: () => boolean,
  ): Promise<void> {
    const failures = (this.failures.get(partition) ?? 0) + 1;
    this.failures.set(partition, failures);
    const until = Date.now() + Math.min(FAILED_WAIT_MAX_MS, FAILED_WAIT_MS * 2 ** (failures - 1));
    while (isRunning() && Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, Math.min(1000, until - Date.now())));
      await heartbeat();
    }
  }

  /** The partition's seeks so far: a chunk handed over before the last one counts for nothing. */
  private epochOf(partition: number): number {
    return this.epochs.get(partition) ?? 0;
  }

  /**
   * Commits `next` on the partition once the commits before it are done, unless a later one went
   * first. A commit refused (a rebalance under way) is left: whoever owns the partition now starts
   * at the offset committed before, which the checkpoints cover too.
   */
  private commit(consumer: Consumer, partition: number, next: string): void {
    const { topic, logger } = this.options;
    const before = this.commits.get(partition) ?? Promise.resolve();
    const done = before.then(async () => {
      if (Number(next) <= Number(this.committed.get(partition) ?? -1)) return;
      try {
        await consumer.commitOffsets([{ topic, partition, offset: next }]);
        this.committed.set(partition, next);
        this.options.onCommit?.(partition, next);
      } catch (err) {
        logger?.debug({ err, topic, partition, offset: next }, "offset not committed");
      }
    });
    this.commits.set(partition, done);
  }

  /** Fetches the partition again from its committed offset, once per failure (`epoch` as the chunk saw it). */
  private goBack(consumer: Consumer, partition: number, epoch: number, err: unknown): void {
    if (this.epochOf(partition) !== epoch) return;
    this.epochs.set(partition, epoch + 1);
    const { topic, logger } = this.options;
    const offset = this.committed.get(partition);
    logger?.warn(
      { err, topic, partition, offset },
      "batch failed; reading the partition again from the committed offset",
    );
    if (offset === undefined) return;
    try {
      consumer.seek({ topic, partition, offset });
    } catch (seekErr) {
      // Not running any more: the next start resumes at the committed offset anyway.
      logger?.debug({ err: seekErr, topic, partition }, "no seek");
    }
  }

  /**
   * Commits what a last checkpoint covers (`checkpoint`), then leaves the group: the next owner of a
   * partition resumes at its committed offset.
   */
  async stop(): Promise<void> {
    const consumer = this.consumer;
    if (consumer === undefined) return;
    try {
      await this.options.checkpoint?.();
      await Promise.all(this.commits.values());
    } catch (err) {
      this.options.logger?.warn({ err }, "no last checkpoint before leaving the group");
    }
    await consumer.disconnect();
    if (this.consumer === consumer) this.consumer = undefined;
  }
}
