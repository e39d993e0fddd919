import type { PgPool } from "../store/index.js";
import type { LockStore } from "./store.js";

/**
 * The first key of every lock's two-key advisory lock: a space of its own, apart from the
 * single-key transaction locks of the migrations, the jobs and the bus.
 */
const LOCK_SPACE = 0x646d736c;

/**
 * Locks as PostgreSQL session-level advisory locks, each held on a pooled connection of its own
 * while its work runs: a process that dies closes its connections, and its locks go with them.
 */
export class PgLockStore implements LockStore {
  constructor(private readonly pool: PgPool) {}

  async exclusive<T>(name: string, work: () => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    // A connection the server ends while the work runs takes the lock with it; unheard, its error
    // would end the process. It is not returned to the pool.
    let broken: Error | undefined;
    const onError = (err: Error): void => void (broken = err);
    client.on("error", onError);
    try {
      await client.query("SELECT pg_advisory_lock($1, hashtext($2))", [LOCK_SPACE, name]);
      try {
        return await work();
      } finally {
        if (!broken) {
          await client
            .query("SELECT pg_advisory_unlock($1, hashtext($2))", [LOCK_SPACE, name])
            .catch((err: Error) => void (broken = err));
        }
      }
    } finally {
      client.off("error", onError);
      client.release(broken);
    }
  }
}
