export {
  ObservationStore,
  observationMigrations,
  type ObservationDocument,
  type StoredObservationInput,
  type StoredObservationRow,
} from "./store.js";
export { ObservationReader, type CandidateRow, type ExportRow } from "./reader.js";
export {
  planFind,
  runFind,
  searchDocs,
  createFindRunner,
  FIND_LIMITS,
  type Doc,
  type FindPlan,
  type FindScope,
  type FindRunner,
} from "./find/index.js";
export {
  createExports,
  exportMigrations,
  executionDetail,
  summary,
  DEFAULT_PAGE_SIZE,
  MAX_PAGE_SIZE,
  parseCron,
  type Exports,
  type ExportJob,
} from "./export/index.js";
