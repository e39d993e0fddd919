import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PgOutboxStore, SqliteOutboxStore, actionsPgMigrations, type OutboxStore } from "./actions/index.js";
import { PgIdentityStore, SqliteIdentityStore, identityPgMigrations, type IdentityStore } from "./auth/index.js";
import {
  PgBusEventStore,
  PgNotifyWakeup,
  SqliteBusEventStore,
  busPgMigrations,
  type BusEventStore,
  type RelayWakeup,
} from "./bus/index.js";
import type { Config } from "./config/index.js";
import {
  PgDeadLetterStore,
  PgStateStore,
  SqliteDeadLetterStore,
  SqliteStateStore,
  deadLetterPgMigrations,
  statePgMigrations,
  type DeadLetterStore,
  type StateStore,
} from "./engine/index.js";
import { PgEventStore, SqliteEventStore, eventsPgMigrations, type EventStore } from "./events/index.js";
import {
  LocalFileStore,
  PgFileMetadataStore,
  PgFileStore,
  SqliteFileMetadataStore,
  filesPgMigrations,
  type FileStore,
} from "./files/index.js";
import { FileKeyStore, MemoryKeyStore, PgKeyStore, keysPgMigrations, type KeyStore } from "./keys/index.js";
import { PgJobStore, SqliteJobStore, jobsPgMigrations, type JobStore } from "./jobs/index.js";
import { FileLockStore, MemoryLockStore, PgLockStore, type LockStore } from "./locks/index.js";
import { migrations } from "./migrations.js";
import type { Logger } from "./observability/index.js";
import {
  PgExportStore,
  PgObservationReader,
  PgObservationStore,
  SqliteExportStore,
  exportPgMigrations,
  localExportFiles,
  observationPgMigrations,
  openObservations,
  PgExportFiles,
  type ExportFiles,
  type ExportStore,
  type OpenedObservations,
} from "./observations/index.js";
import { PgRuleStore, SqliteRuleStore, rulesPgMigrations, type RuleStore } from "./rules/index.js";
import {
  migratePg,
  openDatabase,
  openPgPool,
  startCheckpointer,
  type Db,
  type PgMigration,
  type PgPool,
} from "./store/index.js";
import { PgThingStore, SqliteThingStore, thingsPgMigrations, type ThingStore } from "./things/index.js";

/** Every store seam of the service: what the capabilities' factories take, whichever database is behind them. */
export interface SeamStores {
  identity: IdentityStore;
  things: ThingStore;
  rules: RuleStore;
  jobs: JobStore;
  outbox: OutboxStore;
  events: EventStore;
  deadLetters: DeadLetterStore;
  /** The log the bus relay follows other processes' changes through; undefined when no other process can share it. */
  busEvents: BusEventStore | undefined;
  /** File contents and their metadata. */
  files: FileStore;
  exports: ExportStore;
  /** The files export executions write, downloaded through signed URLs. */
  exportFiles: ExportFiles;
  /** The engine's state; built only in the engine's process (undefined elsewhere). */
  state: StateStore | undefined;
  /** The observation store with its reader (FIND and exports). */
  observations: OpenedObservations;
  /** The keys the service generates for itself (token, URL signing and device secret keys). */
  keys: KeyStore;
  /** Mutual exclusion with the other processes on the same database (provisioning). */
  locks: LockStore;
}

export interface Stores extends SeamStores {
  /** Which database the stores are on, for logs and `/readyz`. */
  readonly backend: "sqlite" | "postgres";
  /** The service's SQLite database when the stores are on SQLite (tests and tools read it directly). */
  readonly sqlite: Db | undefined;
  /** What wakes the bus relay to read other processes' changes; undefined: it polls. */
  readonly busWakeup: RelayWakeup | undefined;
  /** Throws when the database does not answer (`/healthz`). */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** What the stores of a process depend on beside the database. */
export interface StoresOptions {
  config: Pick<Config, "DMS_DATA_DIR" | "DMS_DATABASE_URL" | "DMS_ENGINE_STATE_THREAD" | "ruleIdPrefix"> &
    /** The pool's bounds; the pool's defaults when absent. */
    Partial<
      Pick<Config, "DMS_DATABASE_POOL_SIZE" | "DMS_DATABASE_CONNECT_TIMEOUT_MS" | "DMS_DATABASE_STATEMENT_TIMEOUT_MS">
    >;
  /** This process runs the engine: it writes observations and holds the engine's state. */
  engine: boolean;
  clock: () => number;
  /** Where the stores' own connections (the bus listener) log. */
  logger?: Logger;
}

/** The stores of this process: on PostgreSQL when `DMS_DATABASE_URL` is set, else on SQLite in `DMS_DATA_DIR`. */
export function openStores(options: StoresOptions): Promise<Stores> {
  const url = options.config.DMS_DATABASE_URL;
  return url ? openPgStores(url, options) : Promise.resolve(openSqliteStores(options));
}

/** Every seam on SQLite: the service's database in the data directory, observations in a file of their own. */
export function openSqliteStores({ config, engine, clock }: StoresOptions): Stores {
  const dataDir = config.DMS_DATA_DIR;
  const db = openDatabase({ dataDir, migrations });
  // The engine commits a batch every few milliseconds: its checkpoints go to a thread of their own.
  const checkpointer = engine && dataDir !== ":memory:" ? startCheckpointer(db) : undefined;
  // The engine's process writes observations on a thread of their own; any other reads them.
  const observations = openObservations({ dataDir, db, writerThread: engine, clock });
  return {
    backend: "sqlite",
    sqlite: db,
    identity: new SqliteIdentityStore(db),
    things: new SqliteThingStore(db),
    rules: new SqliteRuleStore(db, config.ruleIdPrefix),
    jobs: new SqliteJobStore(db),
    outbox: new SqliteOutboxStore(db),
    events: new SqliteEventStore(db, clock),
    deadLetters: new SqliteDeadLetterStore(db),
    // Processes that share the data directory follow each other's changes through the database.
    busEvents: dataDir === ":memory:" ? undefined : new SqliteBusEventStore(db),
    files: new LocalFileStore({
      metadata: new SqliteFileMetadataStore(db),
      // An in-memory database's files go to a throw-away directory.
      dir: dataDir === ":memory:" ? mkdtempSync(join(tmpdir(), "dms-files-")) : join(dataDir, "files"),
      clock,
    }),
    exports: new SqliteExportStore(db),
    // An in-memory database's export files go to a throw-away directory.
    exportFiles: localExportFiles(dataDir === ":memory:" ? mkdtempSync(join(tmpdir(), "dms-exports-")) : dataDir),
    state: engine ? new SqliteStateStore(db, { writerThread: config.DMS_ENGINE_STATE_THREAD }) : undefined,
    observations,
    keys: dataDir === ":memory:" ? new MemoryKeyStore() : new FileKeyStore(dataDir),
    locks: dataDir === ":memory:" ? new MemoryLockStore() : new FileLockStore(dataDir),
    busWakeup: undefined,
    ping: async () => {
      db.prepare("SELECT 1").get();
    },
    close: async () => {
      await observations.close();
      await checkpointer?.stop();
      db.close();
    },
  };
}

/** How a seam is made on PostgreSQL: its tables and its store over the shared pool. */
interface PgSeam<K extends keyof SeamStores> {
  migrations: readonly PgMigration[];
  open(pool: PgPool, options: StoresOptions & { url: string }): SeamStores[K] | Promise<SeamStores[K]>;
}

/** Each seam's PostgreSQL implementation: its tables, and its store over the shared pool. */
const PG_SEAMS: { [K in keyof SeamStores]: PgSeam<K> } = {
  identity: { migrations: identityPgMigrations, open: (pool) => new PgIdentityStore(pool) },
  things: { migrations: thingsPgMigrations, open: (pool) => new PgThingStore(pool) },
  rules: { migrations: rulesPgMigrations, open: (pool, o) => new PgRuleStore(pool, o.config.ruleIdPrefix) },
  jobs: { migrations: jobsPgMigrations, open: (pool) => new PgJobStore(pool) },
  outbox: { migrations: actionsPgMigrations, open: (pool) => new PgOutboxStore(pool) },
  events: { migrations: eventsPgMigrations, open: (pool, o) => new PgEventStore(pool, o.clock) },
  deadLetters: { migrations: deadLetterPgMigrations, open: (pool) => new PgDeadLetterStore(pool) },
  busEvents: { migrations: busPgMigrations, open: (pool) => new PgBusEventStore(pool) },
  files: {
    migrations: filesPgMigrations,
    open: (pool, o) => new PgFileStore({ pool, metadata: new PgFileMetadataStore(pool), clock: o.clock }),
  },
  exports: { migrations: exportPgMigrations, open: (pool) => new PgExportStore(pool) },
  // The export tables' migrations come with `exports`.
  exportFiles: { migrations: [], open: (pool) => new PgExportFiles(pool) },
  state: { migrations: statePgMigrations, open: (pool) => PgStateStore.open(pool) },
  keys: { migrations: keysPgMigrations, open: (pool) => new PgKeyStore(pool) },
  locks: { migrations: [], open: (pool) => new PgLockStore(pool) },
  observations: {
    migrations: observationPgMigrations,
    open: async (pool, o) => ({
      store: await PgObservationStore.open(pool, o.clock),
      reader: new PgObservationReader(pool),
      // FIND's threads open pools of their own on the same database.
      source: { postgresUrl: o.url },
      close: async () => {},
    }),
  },
};

/** Every seam's PostgreSQL tables, in the order they are made: what `openPgStores` migrates at start. */
export const pgMigrations: readonly PgMigration[] = Object.values(PG_SEAMS).flatMap((s) => s.migrations);

/** Every seam on the PostgreSQL database at `url`, migrated: nothing is kept in the data directory. */
export async function openPgStores(url: string, options: StoresOptions): Promise<Stores> {
  const seams = PG_SEAMS;
  const { config } = options;
  const pool = openPgPool(url, {
    max: config.DMS_DATABASE_POOL_SIZE,
    connectTimeoutMs: config.DMS_DATABASE_CONNECT_TIMEOUT_MS,
    statementTimeoutMs: config.DMS_DATABASE_STATEMENT_TIMEOUT_MS,
  });
  try {
    await migratePg(pool, pgMigrations);
    const open = <K extends keyof SeamStores>(key: K): Promise<SeamStores[K]> =>
      Promise.resolve(seams[key].open(pool, { ...options, url }));
    const stores: SeamStores = {
      identity: await open("identity"),
      things: await open("things"),
      rules: await open("rules"),
      jobs: await open("jobs"),
      outbox: await open("outbox"),
      events: await open("events"),
      deadLetters: await open("deadLetters"),
      busEvents: await open("busEvents"),
      files: await open("files"),
      exports: await open("exports"),
      exportFiles: await open("exportFiles"),
      state: options.engine ? await open("state") : undefined,
      observations: await open("observations"),
      keys: await open("keys"),
      locks: await open("locks"),
    };
    return {
      ...stores,
      backend: "postgres",
      sqlite: undefined,
      // Every process shares the database: changes are seen as PostgreSQL notifies them.
      busWakeup: options.logger ? new PgNotifyWakeup({ pool, logger: options.logger }) : undefined,
      ping: async () => {
        await pool.query("SELECT 1");
      },
      close: async () => {
        await stores.observations.close();
        await pool.end();
      },
    };
  } catch (err) {
    await pool.end();
    throw err;
  }
}
