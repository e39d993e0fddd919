import type { Db, Migration } from "../store/index.js";

export const deadLetterMigrations: Migration[] = [
  {
    id: "engine-002-dead-letters",
    up: `
      CREATE TABLE engine_dead_letters (
        id INTEGER PRIMARY KEY,
        source TEXT NOT NULL,
        partition INTEGER,
        "offset" TEXT,
        thing_name TEXT,
        domain TEXT,
        reason TEXT NOT NULL,
        message TEXT NOT NULL,
        payload TEXT,
        created_at INTEGER NOT NULL
      );
      CREATE INDEX engine_dead_letters_created ON engine_dead_letters(created_at);
    `,
  },
];

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

interface Row {
  id: number;
  source: string;
  partition: number | null;
  offset: string | null;
  thing_name: string | null;
  domain: string | null;
  reason: DeadLetterReason;
  message: string;
  payload: string | null;
  created_at: number;
}

export const MAX_DEAD_LETTER_PAYLOAD = 4096;

/** Messages the engine could not evaluate, with the reason and where they came from. */
export class DeadLetterStore {
  private readonly insert;

  constructor(private readonly db: Db) {
    this.insert = db.prepare<
      [string, number | null, string | null, string | null, string | null, string, string, string | null, number]
    >(
      `INSERT INTO engine_dead_letters (source, partition, "offset", thing_name, domain, reason, message, payload, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
  }

  insertBatch(letters: readonly DeadLetter[]): void {
    if (letters.length === 0) return;
    this.db.transaction(() => {
      for (const d of letters) {
        this.insert.run(
          d.source,
          d.partition ?? null,
          d.offset ?? null,
          d.thingName ?? null,
          d.domain ?? null,
          d.reason,
          d.message,
          d.payload ?? null,
          d.createdAt,
        );
      }
    })();
  }

  /** Newest first; `before` is the id to continue from (exclusive). */
  list(options: { limit: number; before?: number | undefined; reason?: string | undefined }): StoredDeadLetter[] {
    const rows = this.db
      .prepare<[number, string | null, string | null, number], Row>(
        `SELECT * FROM engine_dead_letters WHERE id < ? AND (? IS NULL OR reason = ?) ORDER BY id DESC LIMIT ?`,
      )
      .all(options.before ?? Number.MAX_SAFE_INTEGER, options.reason ?? null, options.reason ?? null, options.limit);
    return rows.map((r) => ({
      id: r.id,
      source: r.source,
      partition: r.partition ?? undefined,
      offset: r.offset ?? undefined,
      thingName: r.thing_name ?? undefined,
      domain: r.domain ?? undefined,
      reason: r.reason,
      message: r.message,
      payload: r.payload ?? undefined,
      createdAt: r.created_at,
    }));
  }
}
