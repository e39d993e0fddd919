import { ThreadCalls } from "../store/index.js";
import { toColumns, type ObservationColumns } from "./partitions.js";
import type { ObservationStore } from "./store.js";
import type { StoredObservationInput } from "./types.js";

export interface WriterData {
  file: string;
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

  constructor(file: string) {
    this.thread = new ThreadCalls(
      new URL("./writer.mjs", import.meta.url),
      { file } satisfies WriterData,
      "observation writer",
    );
  }

  async insertBatch(inputs: readonly StoredObservationInput[]): Promise<void> {
    if (inputs.length === 0) return;
    await this.thread.call({ op: "insert", rows: toColumns(inputs) });
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
    await this.thread.close({ op: "close" });
  }
}
