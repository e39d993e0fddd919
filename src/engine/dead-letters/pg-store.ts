import { pgDeleteOldest, type PgPool } from "../../store/index.js";
import type { DeadLetter, DeadLetterReason, DeadLetterStore, StoredDeadLetter } from "./store.js";

interface PgRow {
  id: string;
  source: string;
  partition: number | null;
  offset: string | null;
  thing_name: string | null;
  domain: string | null;
  reason: DeadLetterReason;
  message: string;
  payload: string | null;
  created_at: Date;
}

/** Dead letters in PostgreSQL (`deadLetterPgMigrations`), for processes of a cluster sharing one database. */
export class PgDeadLetterStore implements DeadLetterStore {
  constructor(private readonly pool: PgPool) {}

  async insertBatch(letters: readonly DeadLetter[]): Promise<void> {
    if (letters.length === 0) return;
    // One statement for the batch: each column an array, unnest makes the rows (one round trip, one commit).
    await this.pool.query(
      `INSERT INTO engine_dead_letters (source, partition, "offset", thing_name, domain, reason, message, payload, created_at)
       SELECT * FROM unnest($1::text[], $2::int[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
         $8::text[], $9::timestamptz[])`,
      [
        letters.map((d) => d.source),
        letters.map((d) => d.partition ?? null),
        letters.map((d) => d.offset ?? null),
        letters.map((d) => d.thingName ?? null),
        letters.map((d) => d.domain ?? null),
        letters.map((d) => d.reason),
        letters.map((d) => d.message),
        letters.map((d) => d.payload ?? null),
        letters.map((d) => new Date(d.createdAt)),
      ],
    );
  }

  async list(options: {
    limit: number;
    before?: number | undefined;
    reason?: string | undefined;
  }): Promise<StoredDeadLetter[]> {
    const { rows } = await this.pool.query<PgRow>(
      `SELECT * FROM engine_dead_letters WHERE ($1::bigint IS NULL OR id < $1) AND ($2::text IS NULL OR reason = $2)
       ORDER BY id DESC LIMIT $3`,
      [options.before ?? null, options.reason ?? null, options.limit],
    );
    return rows.map((r) => ({
      id: Number(r.id),
      source: r.source,
      partition: r.partition ?? undefined,
      offset: r.offset ?? undefined,
      thingName: r.thing_name ?? undefined,
      domain: r.domain ?? undefined,
      reason: r.reason,
      message: r.message,
      payload: r.payload ?? undefined,
      createdAt: r.created_at.getTime(),
    }));
  }

  deleteOlderThan(cutoff: number, limit: number): Promise<number> {
    return pgDeleteOldest(this.pool, "engine_dead_letters", "created_at", cutoff, limit);
  }

  async count(): Promise<number> {
    const { rows } = await this.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM engine_dead_letters");
    return rows[0]!.n;
  }
}
