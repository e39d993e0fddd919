import type { LockStore } from "./store.js";

/** Locks of this process alone, for an in-memory database that no other process can share. */
export class MemoryLockStore implements LockStore {
  private readonly held = new Map<string, Promise<unknown>>();

  exclusive<T>(name: string, work: () => Promise<T>): Promise<T> {
    const before = this.held.get(name) ?? Promise.resolve();
    const run = before.catch(() => undefined).then(work);
    this.held.set(name, run);
    return run;
  }
}
