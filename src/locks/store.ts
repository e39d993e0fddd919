/**
 * Mutual exclusion between the processes that share one database: work that reads and then
 * writes what another process may be writing at the same time (provisioning, when every node of a
 * cluster starts with the same file) runs in one of them at a time. A lock held by a process that
 * dies is released with it.
 */
export interface LockStore {
  /** Runs `work` once no other process holds the lock `name`, holding it until `work` settles. */
  exclusive<T>(name: string, work: () => Promise<T>): Promise<T>;
}
