import type { Db, Migration } from "../../store/index.js";
import { isLive, type ThingState } from "./store.js";
import { MemoryStateStore } from "./memory.js";

export const stateMigrations: Migration[] = [
  {
    id: "engine-001-state",
    up: `
      CREATE TABLE engine_thing_state (
        thing_name TEXT PRIMARY KEY,
        ts INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        last_source TEXT,
        last_offset INTEGER,
        -- {state, nested?, thresholds?}: one row per thing, written once per batch that saw it.
        doc TEXT NOT NULL
      );
    `,
  },
];

interface ThingRow {
  thing_name: string;
  ts: number;
  seq: number;
  last_source: string | null;
  last_offset: number | null;
  doc: string;
}

/**
 * State kept in memory and written to SQLite on `flush`, which the engine
 * calls once per batch after the batch's actions are in the outbox and
 * before the source commits: a restart resumes half-reached counts and never
 * fires an interval early.
 *
 * Loaded whole at start. After `reload` (a rebalance, a failed batch) memory
 * is emptied and each thing is read from the table when it is next seen:
 * engine processes sharing the data directory hand a partition's things over
 * through the table, since the owner that gave the partition up flushed them
 * before the group could rebalance.
 */
export class SqliteStateStore extends MemoryStateStore {
  private readonly upsert;
  private readonly select;
  /** Memory holds every row (right after the load at start): a miss is a thing never seen. */
  private complete = false;

  constructor(private readonly db: Db) {
    super();
    this.upsert = db.prepare<[string, number, number, string | null, number | null, string]>(
      `INSERT INTO engine_thing_state (thing_name, ts, seq, last_source, last_offset, doc) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT(thing_name) DO UPDATE SET ts = excluded.ts, seq = excluded.seq, last_source = excluded.last_source,
         last_offset = excluded.last_offset, doc = excluded.doc`,
    );
    this.select = db.prepare<[string], ThingRow>("SELECT * FROM engine_thing_state WHERE thing_name = ?");
    for (const r of this.db.prepare<[], ThingRow>("SELECT * FROM engine_thing_state").iterate()) {
      this.things.set(r.thing_name, fromRow(r));
    }
    this.complete = true;
  }

  override thing(thingName: string): ThingState | undefined {
    const known = this.things.get(thingName);
    if (known !== undefined || this.complete) return known;
    const row = this.select.get(thingName);
    if (row === undefined) return undefined;
    const state = fromRow(row);
    this.things.set(thingName, state);
    return state;
  }

  reload(): void {
    this.things.clear();
    this.dirty.clear();
    this.complete = false;
  }

  override flush(changed: readonly ThingState[]): void {
    if (changed.length === 0 && this.dirty.size === 0) return;
    this.db.transaction(() => {
      for (const t of changed) this.write(t);
      if (this.dirty.size === 0) return;
      const written = new Set(changed);
      for (const t of this.dirty) if (!written.has(t)) this.write(t);
    })();
    super.flush(changed);
  }

  private write(t: ThingState): void {
    const doc: Pick<ThingState, "state" | "nested" | "thresholds"> = { state: t.state };
    if (t.nested) doc.nested = t.nested;
    // Inert entries are the engine's spare slots: no entry means the same.
    const live = t.thresholds?.filter(isLive);
    if (live?.length) doc.thresholds = live;
    this.upsert.run(
      t.thingName,
      t.timestamp,
      t.seq ?? 0,
      t.lastSource ?? null,
      t.lastOffset ?? null,
      JSON.stringify(doc),
    );
  }
}

function fromRow(r: ThingRow): ThingState {
  const doc = JSON.parse(r.doc) as Pick<ThingState, "state" | "nested" | "thresholds">;
  const state: ThingState = { thingName: r.thing_name, timestamp: r.ts, state: doc.state, seq: r.seq };
  if (doc.nested) state.nested = doc.nested;
  if (doc.thresholds) state.thresholds = doc.thresholds;
  if (r.last_source !== null && r.last_offset !== null) {
    state.lastSource = r.last_source;
    state.lastOffset = r.last_offset;
  }
  return state;
}
