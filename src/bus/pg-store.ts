import type { PgPool } from "../store/index.js";
import type { BusEventStore, StoredBusEvent } from "./store.js";

/** Arbitrary key of the advisory lock that makes sequence order commit order among appends. */
const APPEND_LOCK = 0x646d7362;

/**
 * The relay's changes in PostgreSQL (`busPgMigrations`), for processes of a cluster sharing one
 * database. Each insert notifies the `dms_bus` channel with its sequence (a trigger), which
 * `PgNotifyWakeup` listens to; the table stays the log a process reads after a reconnect.
 */
export class PgBusEventStore implements BusEventStore {
  /** This process's last append: the next waits for it, so a process's changes keep the order it made them. */
  private tail: Promise<unknown> = Promise.resolve();

  constructor(private readonly pool: PgPool) {}

  async lastSeq(): Promise<number> {
    const { rows } = await this.pool.query<{ seq: string }>("SELECT coalesce(max(seq), 0) AS seq FROM bus_events");
    return Number(rows[0]!.seq);
  }

  append(origin: string, name: string, payload: string, at: number): Promise<void> {
    // The lock is taken before the row draws its sequence and held to the statement's commit: a
    // reader that has seen sequence n can never meet a smaller one committing later.
    const write = this.tail.then(() =>
      this.pool.query(
        `WITH lock AS (SELECT pg_advisory_xact_lock($1))
         INSERT INTO bus_events (origin, name, payload, at) SELECT $2::text, $3::text, $4::text, $5::timestamptz FROM lock`,
        [APPEND_LOCK, origin, name, payload, new Date(at)],
      ),
    );
    this.tail = write.catch(() => undefined);
    return write.then(() => undefined);
  }

  async readAfter(seq: number, origin: string, limit: number): Promise<StoredBusEvent[]> {
    const { rows } = await this.pool.query<{ seq: string; name: string; payload: string }>(
      "SELECT seq, name, payload FROM bus_events WHERE seq > $1 AND origin <> $2 ORDER BY seq LIMIT $3",
      [seq, origin, limit],
    );
    return rows.map((r) => ({ seq: Number(r.seq), name: r.name, payload: r.payload }));
  }

  async prune(at: number): Promise<void> {
    await this.pool.query("DELETE FROM bus_events WHERE at < $1", [new Date(at)]);
  }
}
