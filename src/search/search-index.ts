import { ApiError } from "../errors/index.js";
import type { Domain, Identity, Principal } from "../auth/index.js";
import type { EventBus } from "../bus/index.js";
import type { Db } from "../store/index.js";
import type { ResourceDefinition, ThingRegistry } from "../things/index.js";

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

interface EntryRow {
  search_type: SearchType;
  id: string;
  label: string;
  parent: string | null;
  path: string | null;
  data_type: string | null;
  resource_type: string | null;
  thing_type: string | null;
  tier: number;
}

const COLUMN_OF: Record<Exclude<SortField, "term">, string> = {
  id: "e.id",
  label: "lower(e.label)",
  searchType: "e.search_type",
  parent: "e.parent",
  path: "e.path",
  dataType: "e.data_type",
  resourceType: "e.resource_type",
  thingType: "e.thing_type",
};

const INDEX_NAME = "dms-search";

function badQuery(what: string): ApiError {
  return new ApiError("INVALID_ARGUMENTS", `Invalid search query: ${what}`, "query");
}

/**
 * Prefix search over domains and thing-type resources, in SQLite FTS5. Each
 * word of the term must be the start of a word of the label or id, so `La`
 * and `veg` find `Las Vegas` and `gas` does not. The index is derived data:
 * rebuilt at start, then kept current from `domain.changed` and
 * `thingType.changed` on the bus.
 */
export class SearchIndex {
  private readonly unsubscribe: (() => void)[] = [];

  constructor(
    private readonly db: Db,
    private readonly sources: { identity: Identity; registry: ThingRegistry },
    bus?: EventBus,
  ) {
    this.rebuild();
    if (bus) {
      this.unsubscribe.push(
        bus.on("domain.changed", ({ id, change }) => {
          const domain = change === "deleted" ? undefined : this.sources.identity.domain(id);
          if (domain) this.putDomain(domain);
          else this.removeDomain(id);
        }),
        bus.on("thingType.changed", ({ id, change }) => {
          const type = change === "deleted" ? undefined : this.sources.registry.thingType(id);
          if (type) this.putThingType(type);
          else this.removeThingType(id);
        }),
      );
    }
  }

  close(): void {
    for (const off of this.unsubscribe.splice(0)) off();
  }

  /** Replaces the whole index with the current domains and thing types. */
  rebuild(): void {
    this.db.transaction(() => {
      this.db.prepare("DELETE FROM search_entries").run();
      for (const d of this.sources.identity.domains()) this.putDomain(d);
      for (const t of this.sources.registry.thingTypes()) this.putThingType(t);
    })();
  }

  putDomain(domain: Pick<Domain, "id" | "label" | "parent" | "path">): void {
    this.db
      .prepare(
        `INSERT INTO search_entries (search_type, id, label, domain, parent, path) VALUES ('domain', ?, ?, ?, ?, ?)
         ON CONFLICT (search_type, id) DO UPDATE SET label = excluded.label, parent = excluded.parent, path = excluded.path`,
      )
      .run(domain.id, domain.label, domain.id, domain.parent, domain.path);
  }

  removeDomain(id: string): void {
    this.db.prepare("DELETE FROM search_entries WHERE search_type = 'domain' AND id = ?").run(id);
  }

  /** Indexes the resources of a thing type, replacing what was indexed for it. */
  putThingType(type: IndexedThingType): void {
    this.db.transaction(() => {
      this.removeThingType(type.id);
      const insert = this.db.prepare(
        `INSERT INTO search_entries (search_type, id, label, domain, data_type, resource_type, thing_type)
         VALUES ('resource', ?, ?, ?, ?, ?, ?)`,
      );
      for (const r of type.resources) {
        insert.run(`${type.id}/${r.name}`, r.name, type.domain, r.dataType, r.resourceType, type.id);
      }
    })();
  }

  removeThingType(id: string): void {
    this.db.prepare("DELETE FROM search_entries WHERE search_type = 'resource' AND thing_type = ?").run(id);
  }

  search(principal: Principal, query: SearchQuery): SearchResponse {
    const started = performance.now();
    const size = query.size ?? DEFAULT_SIZE;
    const from = query.from ?? 0;
    if (from + size > MAX_RESULT_WINDOW) throw badQuery(`from + size must not exceed ${MAX_RESULT_WINDOW}`);
    const { domains, typeDomains } = this.visibleDomains(principal, query.filter ?? {});
    const words = query.term.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
    const filter = query.filter ?? {};
    const params = {
      match: words.map((w) => `"${w}"*`).join(" AND "),
      term: query.term.trim().toLowerCase(),
      domains: JSON.stringify(domains),
      typeDomains: JSON.stringify(typeDomains),
      dataType: filter.dataType ?? null,
      thingType: filter.thingType ?? null,
      resourceType: filter.resourceType ?? null,
      size,
      from,
    };
    const where = `
      ${words.length > 0 ? "e.rowid IN (SELECT rowid FROM search_words WHERE search_words MATCH @match) AND" : ""}
      ((e.search_type = 'domain' AND e.domain IN (SELECT value FROM json_each(@domains)))
        OR (e.search_type = 'resource' AND e.domain IN (SELECT value FROM json_each(@typeDomains))))
      AND (@dataType IS NULL OR e.data_type = @dataType)
      AND (@thingType IS NULL OR e.thing_type = @thingType)
      AND (@resourceType IS NULL OR e.resource_type = @resourceType)`;
    // Relevance tiers: the whole label, then the label's start, then any word's start.
    const tier = `CASE WHEN lower(e.label) = @term THEN 0 WHEN substr(lower(e.label), 1, length(@term)) = @term THEN 1 ELSE 2 END`;
    const counted = this.db
      .prepare<[typeof params], { total: number; best: number | null }>(
        `SELECT count(*) AS total, min(${tier}) AS best FROM search_entries e WHERE ${where}`,
      )
      .get(params)!;
    const rows = this.db
      .prepare<[typeof params], EntryRow>(
        `SELECT e.search_type, e.id, e.label, e.parent, e.path, e.data_type, e.resource_type, e.thing_type, ${tier} AS tier
         FROM search_entries e WHERE ${where}
         ORDER BY ${orderBy(query.sort, tier)} LIMIT @size OFFSET @from`,
      )
      .all(params);
    const byTerm = (query.sort?.field ?? "term") === "term";
    return {
      took: Math.round(performance.now() - started),
      timed_out: false,
      _shards: { total: 1, successful: 1, skipped: 0, failed: 0 },
      hits: {
        total: counted.total,
        max_score: byTerm && counted.best !== null ? score(counted.best) : null,
        hits: rows.map((r) => ({
          _index: INDEX_NAME,
          _type: r.search_type,
          _id: r.id,
          _score: byTerm ? score(r.tier) : null,
          _source: this.source(principal, r),
        })),
      },
    };
  }

  /** Domains whose entries the caller may see: Domains.READ for domains, ThingTypes.READ for resources. */
  private visibleDomains(
    principal: Principal,
    filter: NonNullable<SearchQuery["filter"]>,
  ): { domains: string[]; typeDomains: string[] } {
    const { identity } = this.sources;
    let all = identity.domains();
    if (filter.topDomain !== undefined) {
      const top = filter.topDomain.includes("/")
        ? all.find((d) => d.path === filter.topDomain)
        : identity.domain(filter.topDomain);
      if (!top) throw badQuery(`filter.topDomain ${filter.topDomain} is not a domain`);
      all = all.filter((d) => d.path === top.path || d.path.startsWith(`${top.path}/`));
    }
    const resourceOnly =
      filter.type === "resource" ||
      filter.dataType !== undefined ||
      filter.thingType !== undefined ||
      filter.resourceType !== undefined;
    return {
      domains: resourceOnly ? [] : all.filter((d) => principal.can("Domains.READ", d.id)).map((d) => d.id),
      typeDomains:
        filter.type === "domain" ? [] : all.filter((d) => principal.can("ThingTypes.READ", d.id)).map((d) => d.id),
    };
  }

  private source(principal: Principal, r: EntryRow): SearchSource {
    if (r.search_type === "domain") {
      return {
        id: r.id,
        label: r.label,
        metadata: { parent: r.parent, path: visiblePath(principal, r.path ?? r.id) },
        searchType: "domain",
      };
    }
    return {
      id: r.id,
      label: r.label,
      metadata: {
        dataType: r.data_type ?? "unknown",
        resourceType: r.resource_type ?? "thing",
        thingType: r.thing_type ?? "",
      },
      searchType: "resource",
    };
  }
}

function orderBy(sort: SearchQuery["sort"], tier: string): string {
  const dir = sort?.order === "desc" ? "DESC" : "ASC";
  const field = sort?.field ?? "term";
  if (field === "term") return `${tier} ${dir}, lower(e.label) ${dir}, e.id ${dir}`;
  const column = COLUMN_OF[field];
  // Entries without the field (domains have no dataType) come last either way, as in Elasticsearch.
  return `(${column} IS NULL), ${column} ${dir}, lower(e.label), e.id`;
}

function score(tier: number): number {
  return 3 - tier;
}

/** The path from the highest domain on it that the caller can read. */
function visiblePath(principal: Principal, path: string): string {
  const segments = path.split("/");
  const first = segments.findIndex((s) => principal.can("Domains.READ", s));
  return segments.slice(Math.max(first, 0)).join("/");
}
