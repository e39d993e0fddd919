export { SearchIndex, createSearch, type SearchDeps, type SearchSources } from "./search-index.js";
export {
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
} from "./types.js";
