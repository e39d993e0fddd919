import type { SearchType, SortField } from "./types.js";

/** One searchable thing: a domain or a thing-type resource. */
export interface Entry {
  searchType: SearchType;
  id: string;
  label: string;
  /** The domain itself, or the thing type's domain: what visibility is decided on. */
  domain: string;
  parent: string | null;
  path: string | null;
  dataType: string | null;
  resourceType: string | null;
  thingType: string | null;
}

interface Slot extends Entry {
  /** Folded label, for the relevance tiers. */
  folded: string;
  words: string[];
  /** Small integer for the domain, so visibility is a typed-array lookup. */
  domainNo: number;
  /** Where the entry sits in `slots`. */
  no: number;
}

export interface Match {
  /** Domains whose domain entries may be seen. */
  domains: ReadonlySet<string>;
  /** Domains whose thing types' resource entries may be seen. */
  typeDomains: ReadonlySet<string>;
  /** Further conditions (filters); undefined accepts all. */
  accept: ((e: Entry) => boolean) | undefined;
  /** Folded words of the term; each must start some word of the entry. */
  words: readonly string[];
  /** The folded term, for the relevance tiers. */
  term: string;
  sort: SortField;
  desc: boolean;
  /** How many of the best to return (from + size). */
  window: number;
}

export interface SearchResult {
  total: number;
  /** The best relevance tier among all matches. */
  best: number | undefined;
  hits: Ranked[];
}

export interface Ranked {
  entry: Entry;
  /** 0: the label is the term, 1: the label starts with it, 2: some word does. */
  tier: number;
}

/** Lower case without diacritics: what both the index and the term are compared in. */
export function fold(text: string): string {
  return text
    .normalize("NFD")
    .replace(/\p{M}+/gu, "")
    .toLowerCase();
}

/** The words of a text, folded: runs of letters and digits (`lamp_state` is `lamp`, `state`). */
export function wordsOf(text: string): string[] {
  return fold(text).match(/[\p{L}\p{N}]+/gu) ?? [];
}

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * An in-memory inverted index with prefix lookup: a sorted vocabulary turns a
 * word prefix into a range of words, each with the set of entries holding it.
 * Entries also carry a precomputed rank in label order, so a page of the best
 * hits is a walk along that order rather than a sort of every match. Both the
 * vocabulary and the order are rebuilt lazily, on the first search after a
 * change.
 */
export class WordIndex {
  private slots: (Slot | undefined)[] = [];
  private free: number[] = [];
  private readonly byKey = new Map<string, number>();
  private readonly byThingType = new Map<string, Set<string>>();
  private readonly postings = new Map<string, Set<number>>();
  private readonly domainNos = new Map<string, number>();
  /** Entries per domain number, so a search without term or filter counts without a walk. */
  private readonly counts = new Map<number, { domains: number; resources: number }>();
  private vocabulary: string[] | undefined;
  /** Slots in label order (folded label, then id), and each slot's place in it; undefined after a change. */
  private order: Int32Array | undefined;
  private rank = new Int32Array(0);
  private marks = new Int32Array(0);
  private generation = 0;

  get size(): number {
    return this.byKey.size;
  }

  put(entry: Entry): void {
    const key = `${entry.searchType}\u0000${entry.id}`;
    this.remove(entry.searchType, entry.id);
    const words = [...new Set([...wordsOf(entry.label), ...wordsOf(entry.id)])];
    let domainNo = this.domainNos.get(entry.domain);
    if (domainNo === undefined) {
      domainNo = this.domainNos.size;
      this.domainNos.set(entry.domain, domainNo);
    }
    const slot = this.free.pop() ?? this.slots.length;
    // Spelled out, not spread: spread clones get a hidden class each, and every read in the
    // search loop went megamorphic (30x slower over 100,000 entries).
    this.slots[slot] = {
      searchType: entry.searchType,
      id: entry.id,
      label: entry.label,
      domain: entry.domain,
      parent: entry.parent,
      path: entry.path,
      dataType: entry.dataType,
      resourceType: entry.resourceType,
      thingType: entry.thingType,
      folded: fold(entry.label),
      words,
      domainNo,
      no: slot,
    };
    this.byKey.set(key, slot);
    this.count(domainNo, entry.searchType, 1);
    if (entry.thingType !== null) {
      let ids = this.byThingType.get(entry.thingType);
      if (!ids) this.byThingType.set(entry.thingType, (ids = new Set()));
      ids.add(entry.id);
    }
    for (const w of words) {
      let set = this.postings.get(w);
      if (!set) {
        set = new Set();
        this.postings.set(w, set);
        this.vocabulary = undefined;
      }
      set.add(slot);
    }
    this.order = undefined;
  }

  remove(searchType: SearchType, id: string): void {
    const key = `${searchType}\u0000${id}`;
    const slot = this.byKey.get(key);
    if (slot === undefined) return;
    const entry = this.slots[slot]!;
    for (const w of entry.words) {
      const set = this.postings.get(w)!;
      set.delete(slot);
      if (set.size === 0) {
        this.postings.delete(w);
        this.vocabulary = undefined;
      }
    }
    if (entry.thingType !== null) {
      const ids = this.byThingType.get(entry.thingType)!;
      ids.delete(entry.id);
      if (ids.size === 0) this.byThingType.delete(entry.thingType);
    }
    this.count(entry.domainNo, entry.searchType, -1);
    this.slots[slot] = undefined;
    this.free.push(slot);
    this.byKey.delete(key);
    this.order = undefined;
  }

  clear(): void {
    this.slots = [];
    this.free = [];
    this.byKey.clear();
    this.byThingType.clear();
    this.counts.clear();
    this.postings.clear();
    this.vocabulary = undefined;
    this.order = undefined;
  }

  private count(domainNo: number, searchType: SearchType, delta: number): void {
    let counts = this.counts.get(domainNo);
    if (!counts) this.counts.set(domainNo, (counts = { domains: 0, resources: 0 }));
    if (searchType === "domain") counts.domains += delta;
    else counts.resources += delta;
  }

  /** The ids of the resources indexed for a thing type. */
  resourcesOf(thingType: string): string[] {
    return [...(this.byThingType.get(thingType) ?? [])];
  }

  /** The total count of matches, the best tier among them, and the first `window` of them in order. */
  search(match: Match): SearchResult {
    const candidates = match.words.length > 0 ? this.matching(match.words) : undefined;
    const visible = this.visibility(match);
    const accept = match.accept;
    const pass = accept
      ? (s: Slot | undefined): s is Slot => s !== undefined && visible(s) && accept(s)
      : (s: Slot | undefined): s is Slot => s !== undefined && visible(s);
    if (match.sort === "term") return this.byRelevance(match, candidates, pass, visible);
    const hits: Ranked[] = [];
    const each = (s: Slot | undefined) => {
      if (pass(s)) hits.push({ entry: s, tier: tierOf(s, match.term) });
    };
    if (candidates) for (const slot of candidates) each(this.slots[slot]);
    else for (const s of this.slots) each(s);
    const best = hits.reduce<number | undefined>((b, h) => (b === undefined || h.tier < b ? h.tier : b), undefined);
    const field = match.sort;
    this.labelOrder();
    const rank = this.rank;
    hits.sort((a, b) => {
      const x = fieldOf(a.entry, field);
      const y = fieldOf(b.entry, field);
      // Entries without the field (domains have no dataType) come last either way, as in Elasticsearch.
      if (x === null || y === null) return x === y ? 0 : x === null ? 1 : -1;
      const c = cmp(x, y);
      if (c !== 0) return match.desc ? -c : c;
      return rank[(a.entry as Slot).no]! - rank[(b.entry as Slot).no]!;
    });
    return { total: hits.length, best, hits: hits.slice(0, match.window) };
  }

  /** Visibility as typed-array lookups by domain number: bit 1 domain entries, bit 2 resources. */
  private visibility(match: Match): (s: Slot) => boolean {
    const flags = new Uint8Array(this.domainNos.size);
    for (const d of match.domains) {
      const no = this.domainNos.get(d);
      if (no !== undefined) flags[no]! |= 1;
    }
    for (const d of match.typeDomains) {
      const no = this.domainNos.get(d);
      if (no !== undefined) flags[no]! |= 2;
    }
    return (s) => (flags[s.domainNo]! & (s.searchType === "domain" ? 1 : 2)) !== 0;
  }

  /** Walks matches in label order once, keeping up to `window` per tier. */
  private byRelevance(
    match: Match,
    candidates: Int32Array | undefined,
    pass: (s: Slot | undefined) => s is Slot,
    visible: (s: Slot) => boolean,
  ): SearchResult {
    const order = this.labelOrder();
    // Candidates into label order by their ranks: a native numeric sort, not a walk of every entry.
    const walk = candidates
      ? candidates
          .map((slot) => this.rank[slot]!)
          .sort()
          .map((r) => order[r]!)
      : order;
    const tiers: Ranked[][] = [[], [], []];
    // Without a term or filter every entry is tier 1 and the count is known per domain: stop at a full page.
    const countKnown = !candidates && match.term === "" && match.accept === undefined;
    let total = countKnown ? this.countVisible(visible) : 0;
    for (let i = 0; i < walk.length; i++) {
      const s = this.slots[walk[match.desc ? walk.length - 1 - i : i]!];
      if (!pass(s)) continue;
      const tier = tierOf(s, match.term);
      const list = tiers[tier]!;
      if (list.length < match.window) list.push({ entry: s, tier });
      if (countKnown) {
        if (list.length >= match.window) break;
      } else total++;
    }
    const ranked = match.desc ? [...tiers[2]!, ...tiers[1]!, ...tiers[0]!] : [...tiers[0]!, ...tiers[1]!, ...tiers[2]!];
    const best = tiers.findIndex((t) => t.length > 0);
    return { total, best: best < 0 ? undefined : best, hits: ranked.slice(0, match.window) };
  }

  private countVisible(visible: (s: Slot) => boolean): number {
    let total = 0;
    for (const [no, counts] of this.counts) {
      total +=
        (visible(probe("domain", no)) ? counts.domains : 0) + (visible(probe("resource", no)) ? counts.resources : 0);
    }
    return total;
  }

  /** Slots holding, for every word, some word that starts with it. */
  private matching(words: readonly string[]): Int32Array {
    const vocabulary = this.sortedVocabulary();
    this.ensureMarks();
    const base = this.nextGeneration(words.length + 1);
    let found: number[] = [];
    words.forEach((prefix, k) => {
      for (let i = lowerBound(vocabulary, prefix); i < vocabulary.length; i++) {
        const word = vocabulary[i]!;
        if (!word.startsWith(prefix)) break;
        for (const slot of this.postings.get(word)!) {
          // A slot advances one step per word, and only from the step before: a slot seen
          // twice for the same word (`te` in `temp` and `temperature`) counts once.
          if (k === 0 ? this.marks[slot]! < base : this.marks[slot] === base + k) {
            this.marks[slot] = base + k + 1;
            if (k === 0) found.push(slot);
          }
        }
      }
      if (k > 0) found = found.filter((slot) => this.marks[slot] === base + k + 1);
    });
    return Int32Array.from(found);
  }

  /** A membership test for a small set of slots, by marking them. */
  private markSet(slots: Int32Array): (slot: number) => boolean {
    const stamp = this.nextGeneration(1);
    for (const slot of slots) this.marks[slot] = stamp;
    return (slot) => this.marks[slot] === stamp;
  }

  private ensureMarks(): void {
    if (this.marks.length < this.slots.length) {
      const grown = new Int32Array(Math.max(1024, this.slots.length * 2));
      grown.set(this.marks);
      this.marks = grown;
    }
  }

  private nextGeneration(steps: number): number {
    this.ensureMarks();
    if (this.generation + steps + 1 >= 0x7fffffff) {
      this.marks.fill(0);
      this.generation = 0;
    }
    const base = this.generation + 1;
    this.generation += steps + 1;
    return base;
  }

  private sortedVocabulary(): string[] {
    this.vocabulary ??= [...this.postings.keys()].sort(cmp);
    return this.vocabulary;
  }

  private labelOrder(): Int32Array {
    if (!this.order) {
      const live: number[] = [];
      this.slots.forEach((s, i) => {
        if (s) live.push(i);
      });
      live.sort((a, b) => {
        const x = this.slots[a]!;
        const y = this.slots[b]!;
        return cmp(x.folded, y.folded) || cmp(x.id, y.id);
      });
      this.order = Int32Array.from(live);
      this.rank = new Int32Array(this.slots.length);
      this.order.forEach((slot, i) => (this.rank[slot] = i));
    }
    return this.order;
  }
}

/** A stand-in slot for asking the visibility test about a domain number. */
function probe(searchType: SearchType, domainNo: number): Slot {
  return { searchType, domainNo } as Slot;
}

function tierOf(s: Slot, term: string): number {
  return s.folded === term ? 0 : s.folded.startsWith(term) ? 1 : 2;
}

function fieldOf(e: Entry, field: Exclude<SortField, "term">): string | null {
  switch (field) {
    case "id":
      return e.id;
    case "label":
      return (e as Slot).folded;
    case "searchType":
      return e.searchType;
    default:
      return e[field];
  }
}

function lowerBound(sorted: readonly string[], value: string): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
