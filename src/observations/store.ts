import type { Db, Migration } from "../store/index.js";

export const observationMigrations: Migration[] = [
  {
    id: "observations-001-store",
    up: `
      CREATE TABLE observations (
        id INTEGER PRIMARY KEY,
        -- Where the observation came from (e.g. kafka:<topic>:<partition>:<offset>), so a replay stores it once.
        source_key TEXT UNIQUE,
        thing_name TEXT NOT NULL,
        thing_type TEXT NOT NULL,
        domain TEXT NOT NULL,
        ts INTEGER NOT NULL,
        doc TEXT NOT NULL
      );
      CREATE INDEX observations_ts ON observations(ts);
      CREATE INDEX observations_thing_ts ON observations(thing_name, ts);
      CREATE INDEX observations_type_ts ON observations(thing_type, ts);
    `,
  },
];

/** An observation as stored and as FIND answers it in `_source`. */
export interface ObservationDocument {
  thingName: string;
  thingType: string;
  domain: string;
  /** Epoch milliseconds. */
  timestamp: number;
  state: Record<string, unknown>;
  nested?: { type?: string; id?: string; state: Record<string, unknown> }[];
}

export interface StoredObservationInput {
  sourceKey?: string;
  document: ObservationDocument;
}

export interface StoredObservationRow {
  id: number;
  thing_name: string;
  thing_type: string;
  domain: string;
  ts: number;
  doc: string;
}

/**
 * The observation store: written by the rule engine, read by FIND and exports.
 * One SQLite table with the indexes those readers need.
 */
export class ObservationStore {
  private readonly insert;

  constructor(private readonly db: Db) {
    this.insert = db.prepare<[string | null, string, string, string, number, string]>(
      "INSERT OR IGNORE INTO observations (source_key, thing_name, thing_type, domain, ts, doc) VALUES (?, ?, ?, ?, ?, ?)",
    );
  }

  /** Stores a batch in one transaction; an input whose sourceKey is stored already is skipped. */
  insertBatch(inputs: readonly StoredObservationInput[]): void {
    this.db.transaction(() => {
      for (const { sourceKey, document: d } of inputs) {
        this.insert.run(sourceKey ?? null, d.thingName, d.thingType, d.domain, d.timestamp, JSON.stringify(d));
      }
    })();
  }

  count(): number {
    return this.db.prepare<[], { n: number }>("SELECT count(*) AS n FROM observations").get()!.n;
  }
}
