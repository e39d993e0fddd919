import { migrations } from "../../src/migrations.js";
import {
  PgObservationReader,
  PgObservationStore,
  observationPgMigrations,
  openObservations,
  type ObservationReader,
  type ObservationStore,
} from "../../src/observations/index.js";
import { openDatabase } from "../../src/store/index.js";
import { createPgDatabase } from "../support/postgres.js";

/** An observation store and its reader over an empty database of their own. */
export interface OpenedBackend {
  store: ObservationStore;
  reader: ObservationReader;
  /** Closes them and drops the database. */
  close(): Promise<void>;
}

/** One implementation of the observation seams: FIND's tests run on each. */
export interface ObservationBackend {
  name: string;
  open(): Promise<OpenedBackend>;
}

export const SQLITE: ObservationBackend = {
  name: "SQLite",
  async open() {
    const db = openDatabase({ dataDir: ":memory:", migrations });
    const { store, reader } = openObservations({ dataDir: ":memory:", db, writerThread: false });
    return {
      store,
      reader,
      close: async () => {
        db.close();
      },
    };
  },
};

export const POSTGRES: ObservationBackend = {
  name: "PostgreSQL",
  async open() {
    const database = await createPgDatabase(observationPgMigrations);
    const store = await PgObservationStore.open(database.pool);
    return { store, reader: new PgObservationReader(database.pool), close: () => database.drop() };
  },
};

export const OBSERVATION_BACKENDS: readonly ObservationBackend[] = [SQLITE, POSTGRES];
