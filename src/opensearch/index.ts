export {
  openSearchBackend,
  type OpenSearchBackend,
  type OpenSearchBackendDeps,
  type OpenSearchSettings,
  type StoreRoleTopic,
} from "./backend.js";
export { OpenSearchClient, OpenSearchError, OpenSearchUnavailable } from "./client.js";
export { ObservationIndexer, type IndexerOptions } from "./indexer.js";
export { openSearchFind, type OpenSearchFindOptions } from "./find.js";
export { OpenSearchExportReader } from "./reader.js";
export { OpenSearchObservationStore } from "./store.js";
export { IndexTemplates } from "./templates.js";
export { BulkQueue } from "./bulk-queue.js";
export { bulkItem } from "./documents.js";
export { indexTemplate, typeMapping } from "./mapping.js";
export {
  allPattern,
  answeredIndex,
  indexOf,
  parseIndex,
  typePattern,
  type IndexLayout,
  type IndexPeriod,
} from "./indices.js";
export { CALENDAR_INTERVALS, toOpenSearch } from "./translate.js";
export { BOUNDS_ADDED, EXTENDED_STATS_ADDED, fromOpenSearch } from "./answer.js";
