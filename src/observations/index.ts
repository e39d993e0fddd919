export { SqliteObservationStore, observationMigrations, type ObservationStore } from "./store.js";
export type { ObservationDocument, StoredObservationInput } from "./types.js";
export {
  DOCUMENT_SQL,
  documents,
  ObservationColumnsBuilder,
  plainNames,
  storedInput,
  type ObservationColumns,
  type StateText,
} from "./rows.js";
// The layout of the observation file, for tools and benchmarks that read it with SQL of their own.
export { dayOf, partitionTable, DAY_MS } from "./partitions.js";
export { openObservations, OBSERVATIONS_FILE, type OpenedObservations } from "./open.js";
export {
  SqliteObservationReader,
  MIN_TS,
  MAX_TS,
  type ObservationReader,
  type CandidateRow,
  type ExportPageRow,
  type ExportPosition,
  type ExportReader,
  type ExportRow,
} from "./reader.js";
export { PgObservationStore, createDayPartitions, observationPgMigrations } from "./pg-store.js";
export { PgObservationReader } from "./pg-reader.js";
export { openObservationReader, type ReaderSource } from "./source.js";
export {
  planFind,
  runFind,
  searchDocs,
  createFindRunner,
  declaredFieldTypes,
  findJson,
  FIND_LIMITS,
  dateRangeBounds,
  badQuery,
  checkJsonDepth,
  timeBudgetExceeded,
  type Doc,
  type FieldTypes,
  type FindPlan,
  type FindScope,
  type FindRunner,
} from "./find/index.js";
export {
  createExports,
  exportMigrations,
  exportPgMigrations,
  ExportRunner,
  ExportScheduler,
  ExportService,
  PgExportStore,
  SqliteExportStore,
  type ExportStore,
  localExportFiles,
  PgExportFiles,
  EXPORT_CHUNK_BYTES,
  type ExportFiles,
  executionDetail,
  summary,
  DEFAULT_PAGE_SIZE,
  MAX_PAGE_SIZE,
  parseCron,
  type Exports,
  type ExportJob,
} from "./export/index.js";
