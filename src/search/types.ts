import type { ResourceDefinition } from "../things/index.js";

export const SEARCH_TYPES = ["domain", "resource"] as const;
export type SearchType = (typeof SEARCH_TYPES)[number];

/** Fields a search may sort on besides `term` (relevance); `metadata.<field>` names the same. */
export const SORT_FIELDS = [
  "term",
  "id",
  "label",
  "searchType",
  "parent",
  "path",
  "dataType",
  "resourceType",
  "thingType",
] as const;
export type SortField = (typeof SORT_FIELDS)[number];

/** Like Elasticsearch's index.max_result_window: `from + size` may not pass it. */
export const MAX_RESULT_WINDOW = 10_000;
export const DEFAULT_SIZE = 100;

export interface SearchQuery {
  term: string;
  size?: number | undefined;
  from?: number | undefined;
  sort?: { field?: SortField | undefined; order?: "asc" | "desc" | undefined } | undefined;
  filter?:
    | {
        type?: SearchType | undefined;
        dataType?: string | undefined;
        thingType?: string | undefined;
        resourceType?: string | undefined;
        topDomain?: string | undefined;
      }
    | undefined;
}

export type SearchSource =
  | { id: string; label: string; metadata: { parent: string | null; path: string }; searchType: "domain" }
  | {
      id: string;
      label: string;
      metadata: { dataType: string; resourceType: string; thingType: string };
      searchType: "resource";
    };

export interface SearchHit {
  _index: string;
  _type: SearchType;
  _id: string;
  _score: number | null;
  _source: SearchSource;
}

export interface SearchResponse {
  took: number;
  timed_out: false;
  _shards: { total: 1; successful: 1; skipped: 0; failed: 0 };
  hits: { total: number; max_score: number | null; hits: SearchHit[] };
}

/** A thing type as the index needs it. */
export interface IndexedThingType {
  id: string;
  domain: string;
  resources: readonly ResourceDefinition[];
}
