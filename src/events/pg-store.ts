import { pgDeleteOldest, type PgPool } from "../store/index.js";
import type { Classification, EventQuery, EventRecord, EventStore, NewEvent } from "./store.js";

interface PgEventRow {
  id: string;
  rule_id: string;
  category: string | null;
  thing_name: string;
  thing_type: string;
  domain: string;
  classification: Classification;
  message: string;
  acknowledgment_required: boolean;
  acknowledged_at: Date | null;
  acknowledged_by: string | null;
  ts: Date;
}

/** An event id as the interface passes it: digits that fit a BIGINT, else no such event. */
const EVENT_ID = /^\d{1,15}$/;

/** Events in PostgreSQL (`eventsPgMigrations`), for processes of a cluster sharing one database. */
export class PgEventStore implements EventStore {
  constructor(
    private readonly pool: PgPool,
    private readonly clock: () => number,
  ) {}

  async insert(e: NewEvent): Promise<{ event: EventRecord; created: boolean }> {
    // ON CONFLICT DO NOTHING answers no row for a redelivery; the second statement reads the stored one.
    const inserted = await this.pool.query<PgEventRow>(
      `INSERT INTO events (idempotency_key, rule_id, category, thing_name, thing_type, domain,
         classification, message, acknowledgment_required, ts) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
       ON CONFLICT (idempotency_key) DO NOTHING RETURNING *`,
      [
        e.idempotencyKey,
        e.ruleId,
        e.category ?? null,
        e.thingName,
        e.thingType,
        e.domain,
        e.classification,
        e.message,
        e.acknowledgmentRequired,
        new Date(e.time),
      ],
    );
    if (inserted.rows[0]) return { event: toEvent(inserted.rows[0]), created: true };
    const { rows } = await this.pool.query<PgEventRow>("SELECT * FROM events WHERE idempotency_key = $1", [
      e.idempotencyKey,
    ]);
    return { event: toEvent(rows[0]!), created: false };
  }

  async get(id: string): Promise<EventRecord | undefined> {
    if (!EVENT_ID.test(id)) return undefined;
    const { rows } = await this.pool.query<PgEventRow>("SELECT * FROM events WHERE id = $1", [id]);
    return rows[0] && toEvent(rows[0]);
  }

  async acknowledge(id: string, userName: string): Promise<EventRecord | undefined> {
    if (!EVENT_ID.test(id)) return undefined;
    // One statement: the first acknowledgement wins, a later one reads back the first's time and user.
    const { rows } = await this.pool.query<PgEventRow>(
      `UPDATE events SET acknowledged_at = coalesce(acknowledged_at, $2),
         acknowledged_by = CASE WHEN acknowledged_at IS NULL THEN $3 ELSE acknowledged_by END
       WHERE id = $1 RETURNING *`,
      [id, new Date(this.clock()), userName],
    );
    return rows[0] && toEvent(rows[0]);
  }

  deleteOlderThan(cutoff: number, limit: number): Promise<number> {
    return pgDeleteOldest(this.pool, "events", "ts", cutoff, limit);
  }

  async list(q: EventQuery): Promise<{ events: EventRecord[]; nextMarker?: string }> {
    if (q.domains.length === 0) return { events: [] };
    const args: unknown[] = [q.domains];
    const where = ["domain = ANY($1::text[])"];
    const add = (column: string, op: string, value: unknown): void => {
      if (value === undefined) return;
      args.push(value);
      where.push(`${column} ${op} $${args.length}`);
    };
    add("thing_name", "=", q.thingName);
    add("category", "=", q.category);
    add("classification", "=", q.classification);
    add("ts", ">=", q.from === undefined ? undefined : new Date(q.from));
    add("ts", "<=", q.to === undefined ? undefined : new Date(q.to));
    add("id", "<", q.marker);
    if (q.acknowledged !== undefined) where.push(`acknowledged_at IS ${q.acknowledged ? "NOT NULL" : "NULL"}`);
    args.push(q.size + 1);
    const { rows } = await this.pool.query<PgEventRow>(
      `SELECT * FROM events WHERE ${where.join(" AND ")} ORDER BY id DESC LIMIT $${args.length}`,
      args,
    );
    const more = rows.length > q.size;
    const page = rows.slice(0, q.size).map(toEvent);
    return more ? { events: page, nextMarker: page[page.length - 1]!.id } : { events: page };
  }
}

function toEvent(r: PgEventRow): EventRecord {
  const event: EventRecord = {
    id: r.id,
    ruleId: r.rule_id,
    thingName: r.thing_name,
    thingType: r.thing_type,
    domain: r.domain,
    classification: r.classification,
    message: r.message,
    acknowledgmentRequired: r.acknowledgment_required,
    acknowledged: r.acknowledged_at !== null,
    time: r.ts.toISOString(),
  };
  if (r.category !== null) event.category = r.category;
  if (r.acknowledged_at !== null) event.acknowledgedAt = r.acknowledged_at.toISOString();
  if (r.acknowledged_by !== null) event.acknowledgedBy = r.acknowledged_by;
  return event;
}
