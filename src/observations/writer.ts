import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
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

export type WriterReply = { id: number; value: number; error?: undefined } | { id: number; error: string };

/** `Omit` applied to each member of a union (a plain `Omit` would merge the members). */
type OmitEach<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
/** A request before its id. */
type Request = OmitEach<WriterRequest, "id">;

/**
 * The engine's observation store: the day partitions written by a thread of
 * their own (`writer-thread.ts`) on the observation file. What stays on the
 * engine's thread is the JSON of each document and one message per batch; a
 * batch's promise resolves once its transaction committed, so the engine's
 * source still commits only what is stored, while the engine evaluates the
 * next batch during the inserts of this one.
 */
export class ThreadedObservationStore implements ObservationStore {
  private readonly worker: Worker;
  private readonly waiting = new Map<number, { resolve: (n: number) => void; reject: (e: Error) => void }>();
  private nextId = 1;
  private failure: Error | undefined;

  constructor(file: string) {
    this.worker = new Worker(fileURLToPath(new URL("./writer.mjs", import.meta.url)), {
      workerData: { file } satisfies WriterData,
    });
    this.worker.on("message", (reply: WriterReply) => {
      const waiter = this.waiting.get(reply.id);
      if (waiter === undefined) return;
      this.waiting.delete(reply.id);
      if (reply.error !== undefined) waiter.reject(new Error(reply.error));
      else waiter.resolve(reply.value);
    });
    // A writer that died takes every waiting batch with it; later ones fail at once (the source replays them).
    const fail = (err: Error): void => {
      this.failure = err;
      for (const waiter of this.waiting.values()) waiter.reject(err);
      this.waiting.clear();
    };
    this.worker.on("error", fail);
    this.worker.on("exit", (code) => fail(new Error(`observation writer exited (${code})`)));
    // Idle, the thread does not keep the process alive; a batch waiting for it does (see `call`).
    this.worker.unref();
  }

  async insertBatch(inputs: readonly StoredObservationInput[]): Promise<void> {
    if (inputs.length === 0) return;
    await this.call({ op: "insert", rows: toColumns(inputs) });
  }

  deleteOlderThan(cutoff: number, limit: number): Promise<number> {
    return this.call({ op: "delete", cutoff, limit });
  }

  count(): Promise<number> {
    return this.call({ op: "count" });
  }

  async maintain(): Promise<void> {
    await this.call({ op: "maintain" });
  }

  async close(): Promise<void> {
    if (this.failure) return;
    await this.call({ op: "close" }).catch(() => 0);
  }

  private call(request: Request): Promise<number> {
    if (this.failure) return Promise.reject(this.failure);
    const id = this.nextId++;
    return new Promise<number>((resolve, reject) => {
      if (this.waiting.size === 0) this.worker.ref();
      this.waiting.set(id, {
        resolve: (n) => {
          this.settled();
          resolve(n);
        },
        reject: (e) => {
          this.settled();
          reject(e);
        },
      });
      this.worker.postMessage({ ...request, id } as WriterRequest);
    });
  }

  private settled(): void {
    if (this.waiting.size === 0) this.worker.unref();
  }
}
