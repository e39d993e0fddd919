import { migrate, openDatabase, startCheckpointer, type Db } from "../store/index.js";
import { ObservationPartitions, partitionMigrations } from "./partitions.js";
import { ObservationColumnsBuilder } from "./rows.js";
import { SqliteObservationReader, type ObservationReader } from "./reader.js";
import type { ReaderSource } from "./source.js";
import { SqliteObservationStore, type ObservationStore } from "./store.js";
import { ThreadedObservationStore } from "./writer.js";

/** The observation store of a process and the reader FIND and exports use. */
export interface OpenedObservations {
  store: ObservationStore;
  reader: ObservationReader;
  /** Where FIND's threads open their readers; undefined when they cannot (in memory: they then run in-process). */
  source: ReaderSource | undefined;
  close(): Promise<void>;
}

export interface OpenObservationsOptions {
  /** The service's data directory, or `:memory:`. */
  dataDir: string;
  /** The service's database: holds the observations when in memory, and an older layout's table to move. */
  db: Db;
  /** Writes on a thread of their own (the engine's process); else on this thread (retention, tools). */
  writerThread: boolean;
  /** What says which days have closed (their thing index built); a writer thread's runs from its reading at open. */
  clock?: () => number;
  /** How often the writer thread's column builder looks for closed days to take apart (tests shorten it). */
  columnsEveryMs?: number;
}

export const OBSERVATIONS_FILE = "observations.sqlite";

/**
 * Observations live in a file of their own (`observations.sqlite` beside
 * `dms.sqlite`): its writer (a thread) never waits for the service's writes,
 * and the service's never wait for it. In memory (tests) they live in the
 * service's database, written on this thread.
 */
export function openObservations(options: OpenObservationsOptions): OpenedObservations {
  if (options.dataDir === ":memory:") {
    migrate(options.db, partitionMigrations);
    return {
      store: new SqliteObservationStore(options.db, options.clock),
      reader: new SqliteObservationReader(options.db),
      source: undefined,
      close: async () => {},
    };
  }
  const db = openDatabase({ dataDir: options.dataDir, migrations: partitionMigrations, fileName: OBSERVATIONS_FILE });
  moveLegacyTable(options.db, db);
  // The writer thread's commits leave the WAL's checkpoints to a thread of their own: a commit past
  // 1,000 pages copies the WAL back with two fsyncs, and the next batch waits (measured on the writer
  // alone: 12.6-14.4 µs a row with them, 6.6-8.0 without).
  const checkpointer = options.writerThread ? startCheckpointer(db) : undefined;
  const store = options.writerThread
    ? new ThreadedObservationStore(
        db.name,
        options.columnsEveryMs,
        Number(db.pragma("wal_autocheckpoint", { simple: true })),
        options.clock === undefined ? 0 : options.clock() - Date.now(),
      )
    : new SqliteObservationStore(db, options.clock);
  return {
    store,
    reader: new SqliteObservationReader(db),
    source: { sqliteFile: db.name },
    close: async () => {
      await store.close();
      await checkpointer?.stop();
      db.close();
    },
  };
}

/** Rows moved per transaction from the single table of earlier versions. */
const MOVE_CHUNK = 10_000;

/**
 * Earlier versions kept every observation in one `observations` table of the
 * service's database: moved into the day partitions once, in chunks, then dropped.
 */
function moveLegacyTable(service: Db, observations: Db): void {
  const legacy = service
    .prepare<[], { n: number }>(
      "SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = 'observations'",
    )
    .get()!.n;
  if (legacy === 0) return;
  const partitions = new ObservationPartitions(observations);
  const page = service.prepare<
    [number, number],
    { id: number; thing_name: string; thing_type: string; domain: string; ts: number; doc: string }
  >("SELECT id, thing_name, thing_type, domain, ts, doc FROM observations WHERE id > ? ORDER BY id LIMIT ?");
  for (let after = 0; ;) {
    const rows = page.all(after, MOVE_CHUNK);
    if (rows.length === 0) break;
    const columns = new ObservationColumnsBuilder(rows.length);
    for (const r of rows) columns.addDocument(r.thing_name, r.thing_type, r.domain, r.ts, r.doc, -1, 0);
    partitions.insert(columns.columns());
    after = rows[rows.length - 1]!.id;
  }
  service.exec("DROP TABLE observations");
}
