import type { Db, Migration } from "../../store/index.js";
import { fromRow, stateDoc, thingValues, type ThingRow } from "./doc.js";
import type { ThingState } from "./store.js";
import { MemoryStateStore } from "./memory.js";
import { RowMaker, stateWriter, type RowValues } from "./rows.js";
import { StateWriter } from "./writer.js";

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
  {
    // Clustered by thing name: a checkpoint writes its things in name order, so the rows of one
    // slice share leaf pages (in a rowid table they sat in the order first written, and every
    // upsert of a checkpoint's random-order slice was a page of its own in the WAL).
    id: "engine-002-state-by-name",
    up: `
      CREATE TABLE engine_thing_state_by_name (
        thing_name TEXT PRIMARY KEY,
        ts INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        last_source TEXT,
        last_offset INTEGER,
        doc TEXT NOT NULL
      ) WITHOUT ROWID;
      INSERT INTO engine_thing_state_by_name SELECT thing_name, ts, seq, last_source, last_offset, doc FROM engine_thing_state;
      DROP TABLE engine_thing_state;
      ALTER TABLE engine_thing_state_by_name RENAME TO engine_thing_state;
    `,
  },
];

export interface SqliteStateOptions {
  /**
   * Writes on a thread of its own, on a connection to the database's file (the engine's process):
   * the engine's thread only serializes a checkpoint's slice. A database in memory is written on
   * this thread whatever this says.
   */
  writerThread?: boolean;
}

/**
 * State kept in memory and written to SQLite on `flush`, which the engine
 * calls for each slice of a checkpoint (its things in name order, the table's),
 * between batches whose actions are all in the outbox; a source commits what a
 * checkpoint covers once all its slices resolved: a restart resumes half-reached
 * counts and never fires an interval early. The states are serialized during
 * `flush`, as they are then; with a writer thread the upserts run there, beside
 * the engine's next batches.
 *
 * Loaded whole at start. After `reload` (a rebalance, a failed batch) memory
 * is emptied and each thing is read from the table when it is next seen:
 * engine processes sharing the data directory hand a partition's things over
 * through the table, as the last checkpoint of the owner that gave the
 * partition up left them (the new owner replays from the committed offset).
 */
export class SqliteStateStore extends MemoryStateStore {
  private readonly write: (n: number, row: RowValues) => void;
  private readonly select;
  /** Memory holds every row (right after the load at start): a miss is a thing never seen. */
  private complete = false;
  /** Started on the first flush that has rows, so that a store that never writes starts no thread. */
  private writer: StateWriter | undefined;
  private readonly threaded: boolean;
  /** The last flush handed to the writer thread: settled, every flush before it is too. */
  private written: Promise<void> = Promise.resolve();

  constructor(
    private readonly db: Db,
    options: SqliteStateOptions = {},
  ) {
    super();
    this.threaded = (options.writerThread ?? false) && !db.memory;
    this.write = stateWriter(db);
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

  /** Once the flushes handed to the writer thread are written (or failed), so that the table is read as they left it. */
  async reload(): Promise<void> {
    await this.written.catch(() => undefined);
    this.things.clear();
    this.dirty.clear();
    this.complete = false;
  }

  override flush(changed: readonly ThingState[]): Promise<void> | void {
    if (changed.length === 0 && this.dirty.size === 0) return;
    let things = changed;
    if (this.dirty.size > 0) {
      const written = new Set(changed);
      const all = [...changed];
      for (const t of this.dirty) if (!written.has(t)) all.push(t);
      things = all;
    }
    if (!this.threaded) {
      // Bound straight from the states: no rows made for a post there is none of.
      super.flush(changed);
      this.db.transaction(() => this.write(things.length, (i, into, at) => thingValues(things[i]!, into, at)))();
      return;
    }
    const rows = new RowMaker(things.length);
    for (const t of things)
      rows.add(t.thingName, t.timestamp, t.seq ?? 0, t.lastSource ?? null, t.lastOffset ?? null, stateDoc(t));
    super.flush(changed);
    const writing = (this.writer ??= new StateWriter(this.db)).write(rows.rows);
    this.written = writing;
    return writing;
  }

  /** Ends the writer thread once what was handed to it is written; a later flush starts another. */
  async close(): Promise<void> {
    const writer = this.writer;
    this.writer = undefined;
    await this.written.catch(() => undefined);
    await writer?.close();
  }
}
