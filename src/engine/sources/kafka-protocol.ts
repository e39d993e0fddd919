import type { PackedChunk } from "./kafka-chunks.js";
import type { KafkaLoopOptions } from "./kafka-loop.js";

/** What the fetch thread is started with: the consumer loop's options that are data. */
export type FetchThreadData = Pick<
  KafkaLoopOptions,
  | "brokers"
  | "topic"
  | "groupId"
  | "clientId"
  | "fromBeginning"
  | "chunkSize"
  | "partitionsAtOnce"
  | "sessionTimeoutMs"
  | "heartbeatIntervalMs"
>;

/** From the engine's thread to the fetch thread. */
export type ToFetchThread =
  | { op: "start" }
  | { op: "stop" }
  /** The chunk `id` was handled; `checkpointed` says whether a checkpoint answer follows. */
  | { op: "handled"; id: number; checkpointed: boolean }
  | { op: "failed"; id: number; message: string }
  | { op: "checkpointed"; id: number }
  | { op: "not-checkpointed"; id: number; message: string }
  /** The answer to the thread's `checkpoint` request `id`. */
  | { op: "checkpoint-done"; id: number; error?: string };

/** From the fetch thread to the engine's thread. */
export type FromFetchThread =
  | { op: "chunk"; id: number; chunk: PackedChunk }
  | { op: "started" }
  | { op: "start-failed"; message: string }
  | { op: "ready" }
  | { op: "rebalance" }
  | { op: "crash"; message: string; restart: boolean }
  | { op: "lag"; partition: number; lag: number }
  | { op: "commit"; partition: number; offset: string }
  | { op: "checkpoint"; id: number }
  | { op: "log"; level: "info" | "warn" | "debug"; obj: Record<string, unknown>; msg: string }
  | { op: "stopped" };
