import { ApiError } from "../errors/index.js";
import type { Domain, Identity, Principal } from "../auth/index.js";
import type { EventBus } from "../bus/index.js";
import type { ThingRegistry } from "../things/index.js";
import {
  DEFAULT_SIZE,
  MAX_RESULT_WINDOW,
  type IndexedThingType,
  type SearchQuery,
  type SearchResponse,
  type SearchSource,
} from "./types.js";
import { WordIndex, fold, wordsOf, type Entry } from "./word-index.js";

const INDEX_NAME = "dms-search";

function badQuery(what: string): ApiError {
  return new ApiError("INVALID_ARGUMENTS", `Invalid search query: ${what}`, "query");
}

/** What the index is built from: the domain tree and the thing types. */
export interface SearchSources {
  identity: Pick<Identity, "domain" | "domains">;
  registry: Pick<ThingRegistry, "thingType" | "thingTypes">;
}

export interface SearchDeps extends SearchSources {
  /** Where `domain.changed` and `thingType.changed` keep the index current. */
  bus: EventBus;
}

/**
 * Builds the search index and keeps it following the bus; build it before anything changes
 * domains or thing types (provisioning), so that it misses none. Nothing is stored: the index is
 * derived from the identity and thing stores, so it has no store seam of its own.
 */
export function createSearch({ identity, registry, bus }: SearchDeps): SearchIndex {
  return new SearchIndex({ identity, registry }, bus);
}

/**
 * Prefix search over domains and thing-type resources. Each word of the term
 * must be the start of a word of the label or id, so `La` and `veg` find
 * `Las Vegas` and `gas` does not. The index is derived data held in memory:
 * built from domains and thing types at start, then kept current from
 * `domain.changed` and `thingType.changed` on the bus.
 */
export class SearchIndex {
  private readonly index = new WordIndex();
  private readonly unsubscribe: (() => void)[] = [];

  constructor(
    private readonly sources: SearchSources,
    bus?: EventBus,
  ) {
    this.rebuild();
    if (bus) {
      this.unsubscribe.push(
        bus.follow("domain.changed", ({ id, change }) => {
          const domain = change === "deleted" ? undefined : this.sources.identity.domain(id);
          if (domain) this.putDomain(domain);
          else this.removeDomain(id);
        }),
        bus.follow("thingType.changed", ({ id, change }) => {
          const type = change === "deleted" ? undefined : this.sources.registry.thingType(id);
          if (type) this.putThingType(type);
          else this.removeThingType(id);
        }),
      );
    }
  }

  /** How many entries are indexed. */
  get size(): number {
    return this.index.size;
  }

  close(): void {
    for (const off of this.unsubscribe.splice(0)) off();
  }

  /** Replaces the whole index with the current domains and thing types. */
  rebuild(): void {
    this.index.clear();
    for (const d of this.sources.identity.domains()) this.putDomain(d);
    for (const t of this.sources.registry.thingTypes()) this.putThingType(t);
  }

  putDomain(domain: Pick<Domain, "id" | "label" | "parent" | "path">): void {
    this.index.put({
      searchType: "domain",
      id: domain.id,
      label: domain.label,
      domain: domain.id,
      parent: domain.parent,
      path: domain.path,
      dataType: null,
      resourceType: null,
      thingType: null,
    });
  }

  removeDomain(id: string): void {
    this.index.remove("domain", id);
  }

  /** Indexes the resources of a thing type, replacing what was indexed for it. */
  putThingType(type: IndexedThingType): void {
    this.removeThingType(type.id);
    for (const r of type.resources) {
      this.index.put({
        searchType: "resource",
        id: `${type.id}/${r.name}`,
        label: r.name,
        domain: type.domain,
        parent: null,
        path: null,
        dataType: r.dataType,
        resourceType: r.resourceType,
        thingType: type.id,
      });
    }
  }

  removeThingType(id: string): void {
    for (const resourceId of this.index.resourcesOf(id)) this.index.remove("resource", resourceId);
  }

  search(principal: Principal, query: SearchQuery): SearchResponse {
    const started = performance.now();
    const size = query.size ?? DEFAULT_SIZE;
    const from = query.from ?? 0;
    if (from + size > MAX_RESULT_WINDOW) throw badQuery(`from + size must not exceed ${MAX_RESULT_WINDOW}`);
    const filter = query.filter ?? {};
    const { domains, typeDomains } = this.visibleDomains(principal, filter);
    const sort = query.sort?.field ?? "term";
    const { total, best, hits } = this.index.search({
      domains,
      typeDomains,
      accept: acceptFilter(filter),
      words: wordsOf(query.term),
      term: fold(query.term.trim()),
      sort,
      desc: query.sort?.order === "desc",
      window: from + size,
    });
    const byTerm = sort === "term";
    return {
      took: Math.round(performance.now() - started),
      timed_out: false,
      _shards: { total: 1, successful: 1, skipped: 0, failed: 0 },
      hits: {
        total,
        max_score: byTerm && best !== undefined ? score(best) : null,
        hits: hits.slice(from).map(({ entry, tier }) => ({
          _index: INDEX_NAME,
          _type: entry.searchType,
          _id: entry.id,
          _score: byTerm ? score(tier) : null,
          _source: source(principal, entry),
        })),
      },
    };
  }

  /** Domains whose entries the caller may see: Domains.READ for domains, ThingTypes.READ for resources. */
  private visibleDomains(
    principal: Principal,
    filter: NonNullable<SearchQuery["filter"]>,
  ): { domains: Set<string>; typeDomains: Set<string> } {
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
    const ids = (privilege: "Domains.READ" | "ThingTypes.READ") =>
      new Set(all.filter((d) => principal.can(privilege, d.id)).map((d) => d.id));
    return {
      domains: resourceOnly ? new Set() : ids("Domains.READ"),
      typeDomains: filter.type === "domain" ? new Set() : ids("ThingTypes.READ"),
    };
  }
}

function acceptFilter(filter: NonNullable<SearchQuery["filter"]>): ((e: Entry) => boolean) | undefined {
  const { dataType, thingType, resourceType } = filter;
  if (dataType === undefined && thingType === undefined && resourceType === undefined) return undefined;
  return (e) =>
    (dataType === undefined || e.dataType === dataType) &&
    (thingType === undefined || e.thingType === thingType) &&
    (resourceType === undefined || e.resourceType === resourceType);
}

function score(tier: number): number {
  return 3 - tier;
}

function source(principal: Principal, e: Entry): SearchSource {
  if (e.searchType === "domain") {
    return {
      id: e.id,
      label: e.label,
      metadata: { parent: e.parent, path: visiblePath(principal, e.path ?? e.id) },
      searchType: "domain",
    };
  }
  return {
    id: e.id,
    label: e.label,
    metadata: {
      dataType: e.dataType ?? "unknown",
      resourceType: e.resourceType ?? "thing",
      thingType: e.thingType ?? "",
    },
    searchType: "resource",
  };
}

/** The path from the highest domain on it that the caller can read. */
function visiblePath(principal: Principal, path: string): string {
  const segments = path.split("/");
  const first = segments.findIndex((s) => principal.can("Domains.READ", s));
  return segments.slice(Math.max(first, 0)).join("/");
}
