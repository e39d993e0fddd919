/** One change as the relay's table keeps it: `payload` is the event as JSON. */
export interface StoredBusEvent {
  seq: number;
  name: string;
  payload: string;
}

/**
 * Where `BusRelay` passes bus changes between processes that share one
 * database: each process appends its own and reads the others' after the last
 * sequence it has seen. Every method answers asynchronously, as a networked
 * database would.
 *
 * A reader that has seen sequence n must have seen everything before it, so
 * sequence order must be commit order: SQLite serializes writers, which gives
 * it; `PgBusEventStore` appends under a transaction-level advisory lock
 * (`pg_advisory_xact_lock`), since a sequence there is taken before commit and
 * a later number can become visible first.
 */
export interface BusEventStore {
  /** The newest sequence so far (0: none): a process that starts reads only what comes after it. */
  lastSeq(): Promise<number>;
  /**
   * Writes a change of `origin`. `EventBus.emit` calls it in line, maybe inside
   * the transaction that made the change: SQLite writes before this returns, in
   * that transaction, so a rollback takes the change back too. A PostgreSQL
   * store has no such transaction to join; there the stores commit before their
   * services emit, so nothing announced can be rolled back.
   */
  append(origin: string, name: string, payload: string, at: number): Promise<void>;
  /** Changes after `seq` that `origin` did not write, oldest first, at most `limit`. */
  readAfter(seq: number, origin: string, limit: number): Promise<StoredBusEvent[]>;
  /** Forgets the changes written before `at` (epoch ms). */
  prune(at: number): Promise<void>;
}
