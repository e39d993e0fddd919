export {
  SearchIndex,
  SEARCH_TYPES,
  SORT_FIELDS,
  MAX_RESULT_WINDOW,
  DEFAULT_SIZE,
  type SearchQuery,
  type SearchResponse,
  type SearchHit,
  type SearchSource,
  type SearchType,
  type SortField,
  type IndexedThingType,
} from "./search-index.js";
export { searchMigrations } from "./migrations.js";
