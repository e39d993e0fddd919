import { readlinkSync } from "node:fs";
import { getPriority, setPriority } from "node:os";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";

/** What a writer thread answers to each request: a number, or why it failed. */
export type ThreadReply = { id: number; value: number; error?: undefined } | { id: number; error: string };

/** `Omit` applied to each member of a union (a plain `Omit` would merge the members). */
export type OmitEach<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/**
 * The calling side of a thread that writes a SQLite file on a connection of its
 * own (the observation writer, the engine state writer): each request posted
 * with an id, answered once, in the order posted. A thread that died takes every
 * waiting request with it, and later ones fail at once (their callers hand the
 * work over again). Idle, the thread does not keep the process alive; a request
 * waiting for it does.
 */
export class ThreadCalls<Request extends { id: number }> {
  private readonly worker: Worker;
  private readonly waiting = new Map<number, { resolve: (n: number) => void; reject: (e: Error) => void }>();
  private nextId = 1;
  private failure: Error | undefined;

  /** `entry` is the thread's plain JavaScript entry; `name` says which thread in errors. */
  constructor(entry: URL, workerData: unknown, name: string) {
    this.worker = new Worker(fileURLToPath(entry), { workerData });
    this.worker.on("message", (reply: ThreadReply) => {
      const waiter = this.waiting.get(reply.id);
      if (waiter === undefined) return;
      this.waiting.delete(reply.id);
      if (reply.error !== undefined) waiter.reject(new Error(reply.error));
      else waiter.resolve(reply.value);
    });
    const fail = (err: Error): void => {
      this.failure = err;
      for (const waiter of this.waiting.values()) waiter.reject(err);
      this.waiting.clear();
    };
    this.worker.on("error", fail);
    this.worker.on("exit", (code) => fail(new Error(`${name} exited (${code})`)));
    this.worker.unref();
  }

  /** Posts the thread's last request (it closes its connection and ends); nothing to do when it is gone already. */
  async close(request: OmitEach<Request, "id">): Promise<void> {
    if (this.failure) return;
    await this.call(request).catch(() => 0);
  }

  /** Posts a request; resolves with the thread's answer. */
  call(request: OmitEach<Request, "id">): Promise<number> {
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
      this.worker.postMessage({ ...request, id });
    });
  }

  private settled(): void {
    if (this.waiting.size === 0) this.worker.unref();
  }
}

/**
 * Lowers the calling thread's priority by `increment` nice steps (background work: FIND, the
 * column cache), so that the engine's and the writer's threads win the CPU when both want it.
 * Linux gives each thread its own nice value: `/proc/thread-self` names this
 * thread's id. Elsewhere (or without the permission) the thread keeps the
 * process's priority, which only matters under CPU contention.
 */
export function lowerThreadPriority(increment: number): void {
  if (increment <= 0) return;
  try {
    const tid = Number(readlinkSync("/proc/thread-self").split("/").pop());
    if (Number.isInteger(tid)) setPriority(tid, Math.min(19, getPriority(tid) + increment));
  } catch {
    // Not Linux: same priority as the process.
  }
}
