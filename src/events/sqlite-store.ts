import { oldestRowsRemover, type Db } from "../store/index.js";
import type { EventQuery, EventRecord, EventStore, NewEvent, Classification } from "./store.js";

interface EventRow {
  id: number;
  rule_id: string;
  category: string | null;
  thing_name: string;
  thing_type: string;
  domain: string;
  classification: Classification;
  message: string;
  acknowledgment_required: number;
  acknowledged_at: number | null;
  acknowledged_by: string | null;
  ts: number;
}

/** Events in the process's SQLite database (`eventsMigrations`). */
export class SqliteEventStore implements EventStore {
  private readonly removeOldest;

  constructor(
    private readonly db: Db,
    private readonly clock: () => number,
  ) {
    this.removeOldest = oldestRowsRemover(db, "events", "ts < ?", "ts");
  }

  deleteOlderThan(cutoff: number, limit: number): Promise<number> {
    return this.removeOldest(cutoff, limit);
  }

  async insert(e: NewEvent): Promise<{ event: EventRecord; created: boolean }> {
    const { changes } = this.db
      .prepare(
        `INSERT OR IGNORE INTO events (idempotency_key, rule_id, category, thing_name, thing_type, domain,
           classification, message, acknowledgment_required, ts) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(
        e.idempotencyKey,
        e.ruleId,
        e.category ?? null,
        e.thingName,
        e.thingType,
        e.domain,
        e.classification,
        e.message,
        e.acknowledgmentRequired ? 1 : 0,
        e.time,
      );
    const row = this.db
      .prepare<[string], EventRow>("SELECT * FROM events WHERE idempotency_key = ?")
      .get(e.idempotencyKey)!;
    return { event: toEvent(row), created: changes > 0 };
  }

  async get(id: string): Promise<EventRecord | undefined> {
    return this.getNow(id);
  }

  async acknowledge(id: string, userName: string): Promise<EventRecord | undefined> {
    if (!this.getNow(id)) return undefined;
    this.db
      .prepare("UPDATE events SET acknowledged_at = ?, acknowledged_by = ? WHERE id = ? AND acknowledged_at IS NULL")
      .run(this.clock(), userName, Number(id));
    return this.getNow(id);
  }

  private getNow(id: string): EventRecord | undefined {
    if (!/^\d{1,15}$/.test(id)) return undefined;
    const row = this.db.prepare<[number], EventRow>("SELECT * FROM events WHERE id = ?").get(Number(id));
    return row && toEvent(row);
  }

  async list(q: EventQuery): Promise<{ events: EventRecord[]; nextMarker?: string }> {
    if (q.domains.length === 0) return { events: [] };
    const where = [`domain IN (${q.domains.map(() => "?").join(",")})`];
    const args: (string | number)[] = [...q.domains];
    const add = (clause: string, value: string | number | undefined): void => {
      if (value === undefined) return;
      where.push(clause);
      args.push(value);
    };
    add("thing_name = ?", q.thingName);
    add("category = ?", q.category);
    add("classification = ?", q.classification);
    add("ts >= ?", q.from);
    add("ts <= ?", q.to);
    add("id < ?", q.marker);
    if (q.acknowledged !== undefined) where.push(`acknowledged_at IS ${q.acknowledged ? "NOT NULL" : "NULL"}`);
    const rows = this.db
      .prepare<(string | number)[], EventRow>(
        `SELECT * FROM events WHERE ${where.join(" AND ")} ORDER BY id DESC LIMIT ${q.size + 1}`,
      )
      .all(...args);
    const more = rows.length > q.size;
    const page = rows.slice(0, q.size).map(toEvent);
    return more ? { events: page, nextMarker: page[page.length - 1]!.id } : { events: page };
  }
}

function toEvent(r: EventRow): EventRecord {
  const event: EventRecord = {
    id: String(r.id),
    ruleId: r.rule_id,
    thingName: r.thing_name,
    thingType: r.thing_type,
    domain: r.domain,
    classification: r.classification,
    message: r.message,
    acknowledgmentRequired: r.acknowledgment_required === 1,
    acknowledged: r.acknowledged_at !== null,
    time: new Date(r.ts).toISOString(),
  };
  if (r.category !== null) event.category = r.category;
  if (r.acknowledged_at !== null) event.acknowledgedAt = new Date(r.acknowledged_at).toISOString();
  if (r.acknowledged_by !== null) event.acknowledgedBy = r.acknowledged_by;
  return event;
}
