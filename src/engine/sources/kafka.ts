import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import type { ObservationSource } from "./source.js";
import type { RawObservation } from "../types.js";
import { unpackChunk } from "./kafka-chunks.js";
import { KafkaConsumerLoop, type Handled, type KafkaHandler, type KafkaLoopOptions } from "./kafka-loop.js";
import type { FetchThreadData, FromFetchThread, ToFetchThread } from "./kafka-protocol.js";

export type { Handled } from "./kafka-loop.js";

export interface KafkaSourceOptions extends KafkaLoopOptions {
  /**
   * Fetch on a thread of its own (default): kafkajs's fetches, record batch decoding, commits and
   * heartbeats run beside the engine instead of taking turns with it on the engine's thread.
   * False runs the consumer loop on the caller's thread.
   */
  fetchThread?: boolean;
}

/**
 * The Kafka source: a consumer group (`KafkaConsumerLoop`) whose chunks the engine handles. A
 * chunk's offsets are committed only once a checkpoint covering it is durable (the engine's
 * `checkpointed`), in order per partition. The loop runs on a fetch thread by default: chunks come
 * to this thread packed (`kafka-chunks.ts`), the engine's answers go back, and the loop's callbacks
 * and logs are called here, on the engine's thread, in the order the loop made them.
 */
export class KafkaObservationSource implements ObservationSource {
  readonly name: string;
  private joined!: () => void;
  /** Resolves once the consumer has joined its group and has partitions: what it will read from now on. */
  readonly ready = new Promise<void>((resolve) => (this.joined = resolve));
  private inProcess: KafkaConsumerLoop | undefined;
  private thread: Worker | undefined;
  /** Resolves once the fetch thread's loop stopped. */
  private stopped: (() => void) | undefined;

  constructor(private readonly options: KafkaSourceOptions) {
    this.name = `kafka:${options.topic}`;
  }

  async start(handle: KafkaHandler): Promise<void> {
    if (this.options.fetchThread === false) {
      const loop = new KafkaConsumerLoop(this.options);
      this.inProcess = loop;
      void loop.ready.then(() => this.joined());
      await loop.start(handle);
      return;
    }
    const o = this.options;
    const data: FetchThreadData = {
      brokers: o.brokers,
      topic: o.topic,
      groupId: o.groupId,
      clientId: o.clientId,
      fromBeginning: o.fromBeginning,
      chunkSize: o.chunkSize,
      partitionsAtOnce: o.partitionsAtOnce,
      sessionTimeoutMs: o.sessionTimeoutMs,
      heartbeatIntervalMs: o.heartbeatIntervalMs,
    };
    const thread = new Worker(fileURLToPath(new URL("./kafka-fetch.mjs", import.meta.url)), {
      workerData: data,
      name: "kafka fetch",
    });
    this.thread = thread;
    this.stopped = undefined;
    const send = (m: ToFetchThread): void => thread.postMessage(m);
    await new Promise<void>((started, failed) => {
      thread.on("error", (err) => {
        failed(err);
        this.options.logger?.warn({ err, topic: o.topic }, "kafka fetch thread failed");
      });
      thread.on("exit", () => {
        const ended = new Error("the kafka fetch thread ended");
        failed(ended);
        // Not asked to stop: the consumer is gone, as after a crash kafkajs does not restart.
        if (this.stopped === undefined && this.thread === thread) this.options.onCrash?.(ended, false);
        this.stopped?.();
        if (this.thread === thread) this.thread = undefined;
      });
      thread.on("message", (m: FromFetchThread) => {
        switch (m.op) {
          case "chunk":
            return this.handleChunk(handle, m.id, unpackChunk(m.chunk), send);
          case "started":
            return started();
          case "start-failed":
            this.thread = undefined;
            void thread.terminate();
            return failed(new Error(m.message));
          case "ready":
            return this.joined();
          case "rebalance":
            return this.options.onRebalance?.();
          case "crash":
            return this.options.onCrash?.(new Error(m.message), m.restart);
          case "lag":
            return this.options.onLag?.(m.partition, m.lag);
          case "commit":
            return this.options.onCommit?.(m.partition, m.offset);
          case "checkpoint":
            return void Promise.resolve(this.options.checkpoint?.()).then(
              () => send({ op: "checkpoint-done", id: m.id }),
              (err: unknown) => send({ op: "checkpoint-done", id: m.id, error: messageOf(err) }),
            );
          case "log":
            return this.options.logger?.[m.level](m.obj, m.msg);
          case "stopped":
            return this.stopped?.();
        }
      });
      send({ op: "start" });
    });
  }

  /** Hands a chunk to the engine and its answers back to the fetch thread. */
  private handleChunk(
    handle: KafkaHandler,
    id: number,
    chunk: RawObservation[],
    send: (m: ToFetchThread) => void,
  ): void {
    handle(chunk).then(
      (handled: Handled) => {
        const checkpointed = handled?.checkpointed;
        send({ op: "handled", id, checkpointed: checkpointed !== undefined });
        checkpointed?.then(
          () => send({ op: "checkpointed", id }),
          (err: unknown) => send({ op: "not-checkpointed", id, message: messageOf(err) }),
        );
      },
      (err: unknown) => send({ op: "failed", id, message: messageOf(err) }),
    );
  }

  /**
   * Commits what a last checkpoint covers, then leaves the group: the next owner of a partition
   * resumes at its committed offset.
   */
  async stop(): Promise<void> {
    const loop = this.inProcess;
    if (loop !== undefined) {
      await loop.stop();
      if (this.inProcess === loop) this.inProcess = undefined;
      return;
    }
    const thread = this.thread;
    if (thread === undefined) return;
    await new Promise<void>((done) => {
      this.stopped = done;
      thread.postMessage({ op: "stop" } satisfies ToFetchThread);
    });
    await thread.terminate();
    if (this.thread === thread) this.thread = undefined;
  }
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
