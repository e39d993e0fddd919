import { oldestRowsRemover, type Db } from "../../store/index.js";
import type { DeadLetter, DeadLetterReason, DeadLetterStore, StoredDeadLetter } from "./store.js";

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

/** Dead letters in the process's SQLite database (`deadLetterMigrations`). */
export class SqliteDeadLetterStore implements DeadLetterStore {
  private readonly insert;
  private readonly countAll;
  private readonly removeOldest;

  constructor(private readonly db: Db) {
    this.insert = db.prepare<
      [string, number | null, string | null, string | null, string | null, string, string, string | null, number]
    >(
      `INSERT INTO engine_dead_letters (source, partition, "offset", thing_name, domain, reason, message, payload, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.countAll = db.prepare<[], { n: number }>("SELECT count(*) AS n FROM engine_dead_letters");
    this.removeOldest = oldestRowsRemover(db, "engine_dead_letters", "created_at < ?", "created_at");
  }

  async insertBatch(letters: readonly DeadLetter[]): Promise<void> {
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

  async list(options: {
    limit: number;
    before?: number | undefined;
    reason?: string | undefined;
  }): Promise<StoredDeadLetter[]> {
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

  async count(): Promise<number> {
    return this.countAll.get()!.n;
  }

  deleteOlderThan(cutoff: number, limit: number): Promise<number> {
    return this.removeOldest(cutoff, limit);
  }
}
