/** Why a message could not be evaluated. */
export const DEAD_LETTER_REASONS = [
  "undecodable",
  "not-json",
  "invalid-observation",
  "missing-thing-name",
  "unknown-thing",
  "missing-timestamp",
  "bad-timestamp",
  "wrong-type",
  "foreign-thing",
] as const;
export type DeadLetterReason = (typeof DEAD_LETTER_REASONS)[number];

export interface DeadLetter {
  source: string;
  partition?: number | undefined;
  offset?: string | undefined;
  thingName?: string | undefined;
  /** The thing's domain when the thing is known: who may read the dead letter. */
  domain?: string | undefined;
  reason: DeadLetterReason;
  message: string;
  /** The message as received, cut at 4 KiB. */
  payload?: string | undefined;
  createdAt: number;
}

export interface StoredDeadLetter extends DeadLetter {
  id: number;
}

export const MAX_DEAD_LETTER_PAYLOAD = 4096;

/**
 * Where the messages the engine could not evaluate are kept, with the reason
 * and where they came from. Every method answers asynchronously, as a
 * networked database would.
 */
export interface DeadLetterStore {
  /**
   * Stores a batch's dead letters in one transaction and resolves once they are
   * durable: the engine awaits it before its batch resolves, so a source commits
   * its offsets only after them and a crash in between replays the messages.
   * SQLite writes in line (the promise is already settled); a PostgreSQL store
   * keeps the same order by resolving after its `COMMIT` (one multi-row INSERT).
   */
  insertBatch(letters: readonly DeadLetter[]): Promise<void>;
  /** Newest first; `before` is the id to continue from (exclusive). */
  list(options: {
    limit: number;
    before?: number | undefined;
    reason?: string | undefined;
  }): Promise<StoredDeadLetter[]>;
  /** How many are kept (the retention bounds them), for `/metrics`. */
  count(): Promise<number>;
  /** Deletes up to `limit` dead letters stored before `cutoff` (epoch ms), oldest first; answers how many. */
  deleteOlderThan(cutoff: number, limit: number): Promise<number>;
}
