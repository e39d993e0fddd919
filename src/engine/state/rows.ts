import type { Db } from "../../store/index.js";

/**
 * Thing states as the table takes them, column by column: documents already
 * JSON, made on the engine's thread when the batch that changed them is done
 * (later batches go on changing the objects), so that handing them to the
 * writer thread copies strings and numbers, not object graphs.
 */
export interface StateRows {
  thingName: string[];
  ts: number[];
  seq: number[];
  lastSource: (string | null)[];
  lastOffset: (number | null)[];
  doc: string[];
}

export function emptyRows(): StateRows {
  return { thingName: [], ts: [], seq: [], lastSource: [], lastOffset: [], doc: [] };
}

/** Writes rows on `db`, one upsert each, in the caller's transaction: the engine's thread and the writer thread alike. */
export function stateWriter(db: Db): (rows: StateRows) => void {
  const upsert = db.prepare<[string, number, number, string | null, number | null, string]>(
    `INSERT INTO engine_thing_state (thing_name, ts, seq, last_source, last_offset, doc) VALUES (?, ?, ?, ?, ?, ?)
     ON CONFLICT(thing_name) DO UPDATE SET ts = excluded.ts, seq = excluded.seq, last_source = excluded.last_source,
       last_offset = excluded.last_offset, doc = excluded.doc`,
  );
  return (rows) => {
    for (let i = 0; i < rows.thingName.length; i++) {
      upsert.run(
        rows.thingName[i]!,
        rows.ts[i]!,
        rows.seq[i]!,
        rows.lastSource[i] ?? null,
        rows.lastOffset[i] ?? null,
        rows.doc[i]!,
      );
    }
  };
}
