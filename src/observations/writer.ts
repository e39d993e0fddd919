import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { ThreadCalls } from "../store/index.js";
import type { ColumnsThreadData } from "./columns-thread.js";
import { MAINTAIN_EVERY_MS } from "./partitions.js";
import { toColumns, type ObservationColumns } from "./rows.js";
import type { ObservationStore } from "./store.js";
import type { StoredObservationInput } from "./types.js";

/** Nice steps of the column builder, as FIND threads: background work. */
const COLUMN_BUILDER_NICE = 10;

export interface WriterData {
  file: string;
  /** Pages of WAL past which a commit checkpoints: raised when a checkpointer thread does it (`open.ts`). */
  walAutocheckpoint: number;
  /**
   * The process clock's lead over `Date.now` when the store opened (a clock cannot cross to the
   * thread): the writer's clock, which says which days have closed, runs from the same reading.
   */
  clockOffsetMs: number;
}

export type WriterRequest =
  | { op: "insert"; id: number; rows: ObservationColumns }
  | { op: "delete"; id: number; cutoff: number; limit: number }
  | { op: "count"; id: number }
  | { op: "maintain"; id: number }
  | { op: "close"; id: number };

/**
 * The engine's observation store: the day partitions written by a thread of
 * their own (`writer-thread.ts`) on the observation file. What stays on the
 * engine's thread is the JSON of each document and one message per batch; a
 * batch's promise resolves once its transaction committed, so the engine's
 * source still commits only what is stored, while the engine evaluates the
 * next batch during the inserts of this one.
 */
export class ThreadedObservationStore implements ObservationStore {
  private readonly thread: ThreadCalls<WriterRequest>;
  /** Builds the closed days' column cache beside the writer (`columns-thread.ts`), never in its way. */
  private readonly columnBuilder: Worker;

  constructor(file: string, columnsEveryMs = MAINTAIN_EVERY_MS, walAutocheckpoint = 1000, clockOffsetMs = 0) {
    this.thread = new ThreadCalls(
      new URL("./writer.mjs", import.meta.url),
      { file, walAutocheckpoint, clockOffsetMs } satisfies WriterData,
      "observation writer",
    );
    this.columnBuilder = new Worker(fileURLToPath(new URL("./column-builder.mjs", import.meta.url)), {
      workerData: { file, niceIncrement: COLUMN_BUILDER_NICE, everyMs: columnsEveryMs } satisfies ColumnsThreadData,
    });
    // It only makes reads faster: a failure leaves FIND reading rows (or building columns itself).
    this.columnBuilder.on("error", () => {});
    this.columnBuilder.unref();
  }

  async insertBatch(inputs: readonly StoredObservationInput[]): Promise<void> {
    await this.insertColumns(toColumns(inputs));
  }

  async insertColumns(columns: ObservationColumns): Promise<void> {
    if (columns.count === 0) return;
    await this.thread.call({ op: "insert", rows: columns });
  }

  deleteOlderThan(cutoff: number, limit: number): Promise<number> {
    return this.thread.call({ op: "delete", cutoff, limit });
  }

  count(): Promise<number> {
    return this.thread.call({ op: "count" });
  }

  async maintain(): Promise<void> {
    await this.thread.call({ op: "maintain" });
  }

  async close(): Promise<void> {
    await this.columnBuilder.terminate();
    await this.thread.close({ op: "close" });
  }
}
