import type { Db, Migration } from "../../store/index.js";
import type { ThingState } from "../state.js";
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
        doc TEXT NOT NULL
      );
      CREATE TABLE engine_thresholds (
        rule_id TEXT NOT NULL,
        thing_name TEXT NOT NULL,
        count INTEGER NOT NULL,
        last_fired_at INTEGER NOT NULL,
        last_seq INTEGER NOT NULL,
        PRIMARY KEY (rule_id, thing_name)
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

interface ThresholdRow {
  rule_id: string;
  thing_name: string;
  count: number;
  last_fired_at: number;
  last_seq: number;
}

/**
 * State kept in memory and written to SQLite on `flush`, which the engine
 * calls once per batch after the batch's actions are in the outbox and
 * before the source commits: a restart resumes half-reached counts and never
 * fires an interval early. Loaded whole at start; a scaled-out engine would
 * restore the same seam from a compacted changelog topic instead.
 */
export class SqliteStateStore extends MemoryStateStore {
  private readonly upsertThing;
  private readonly upsertThreshold;
  private readonly deleteRule;

  constructor(private readonly db: Db) {
    super();
    this.upsertThing = db.prepare<[string, number, number, string | null, number | null, string]>(
      `INSERT INTO engine_thing_state (thing_name, ts, seq, last_source, last_offset, doc) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT(thing_name) DO UPDATE SET ts = excluded.ts, seq = excluded.seq, last_source = excluded.last_source,
         last_offset = excluded.last_offset, doc = excluded.doc`,
    );
    this.upsertThreshold = db.prepare<[string, string, number, number, number]>(
      `INSERT INTO engine_thresholds (rule_id, thing_name, count, last_fired_at, last_seq) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT(rule_id, thing_name) DO UPDATE SET count = excluded.count, last_fired_at = excluded.last_fired_at, last_seq = excluded.last_seq`,
    );
    this.deleteRule = db.prepare<[string]>("DELETE FROM engine_thresholds WHERE rule_id = ?");
    this.load();
  }

  private load(): void {
    for (const r of this.db.prepare<[], ThingRow>("SELECT * FROM engine_thing_state").iterate()) {
      const doc = JSON.parse(r.doc) as Pick<ThingState, "state" | "nested">;
      const state: ThingState = { thingName: r.thing_name, timestamp: r.ts, state: doc.state, seq: r.seq };
      if (doc.nested) state.nested = doc.nested;
      if (r.last_source !== null && r.last_offset !== null) {
        state.lastSource = r.last_source;
        state.lastOffset = r.last_offset;
      }
      this.things.set(r.thing_name, state);
    }
    for (const r of this.db.prepare<[], ThresholdRow>("SELECT * FROM engine_thresholds").iterate()) {
      let perThing = this.thresholds.get(r.thing_name);
      if (perThing === undefined) this.thresholds.set(r.thing_name, (perThing = new Map()));
      perThing.set(r.rule_id, { count: r.count, lastFiredAt: r.last_fired_at, lastSeq: r.last_seq });
    }
  }

  override flush(): void {
    if (this.dirtyThings.size === 0 && this.dirtyThresholds.size === 0 && this.droppedRules.size === 0) return;
    this.db.transaction(() => {
      for (const id of this.droppedRules) this.deleteRule.run(id);
      for (const t of this.dirtyThings) {
        const doc = JSON.stringify(t.nested ? { state: t.state, nested: t.nested } : { state: t.state });
        this.upsertThing.run(t.thingName, t.timestamp, t.seq ?? 0, t.lastSource ?? null, t.lastOffset ?? null, doc);
      }
      for (const [s, [ruleId, thingName]] of this.dirtyThresholds) {
        this.upsertThreshold.run(ruleId, thingName, s.count, s.lastFiredAt, s.lastSeq ?? -1);
      }
    })();
    super.flush();
  }
}
