import { LRUCache } from "lru-cache";
import { plainNames } from "../observations/index.js";
import { readGeoPoint, UNTYPED } from "./compile/index.js";
import type { StateStore, ThingState } from "./state/index.js";
import type { ThingInfo, ThingResolver } from "./things.js";
import type { NestedObservation } from "./types.js";

/** Unknown thing names remembered, so a stream of them does not hit the registry each time. */
const UNKNOWN_THINGS_CACHE = 10_000;

/** A thing the engine has seen: what it is, its state and its thresholds, all mutated in place. */
export interface Runtime {
  info: ThingInfo;
  state: ThingState;
  hasPos: boolean;
  lon: number;
  lat: number;
  /**
   * The thing's state is still the empty object made on first sight: its first observation's
   * resources replace it with a copy of theirs rather than being added to it. A copy has a slot
   * inside the object for every resource, where `{}` has four and puts the rest in a second
   * array: one cache miss fewer for every later observation's merge.
   */
  blank: boolean;
  /**
   * Changed since a checkpoint took it: on the engine's dirty list, once. Cleared when a
   * checkpoint serializes the thing; a change after that puts it on the list again.
   */
  dirty: boolean;
  /**
   * At least as many as the thing's live threshold entries (exactly as many after a prune): at 0,
   * an observation that matches nothing has no entry to reset, and the prune is skipped.
   */
  armed: number;
  /**
   * `info`'s fields that every observation reads, here to save a pointer chase: each thing's
   * records are cold when its observation comes (100,000 things in turn), so `info` would be one
   * more cache miss per observation.
   */
  thingType: string;
  checks: ThingInfo["checks"];
  domain: string;
  domains: ReadonlySet<string>;
  /** Its place among the known things in name order (`Runtimes.byName`); -1 until a checkpoint ranks it. */
  rank: number;
  /** The thing's name, type and domain need no JSON escaping (`plainNames`): its stored rows can be lean. Asked once. */
  plainNames: boolean;
}

const byThingName = (a: Runtime, b: Runtime): number => {
  const x = a.state.thingName;
  const y = b.state.thingName;
  return x < y ? -1 : x > y ? 1 : 0;
};

/** Two lists in name order as one. */
function merge(a: readonly Runtime[], b: readonly Runtime[]): Runtime[] {
  const out = new Array<Runtime>(a.length + b.length);
  let i = 0;
  let j = 0;
  let k = 0;
  while (i < a.length && j < b.length) out[k++] = byThingName(b[j]!, a[i]!) < 0 ? b[j++]! : a[i++]!;
  while (i < a.length) out[k++] = a[i++]!;
  while (j < b.length) out[k++] = b[j++]!;
  return out;
}

/** The things the engine has seen, resolved once (registry and state store) and kept until forgotten. */
export class Runtimes {
  private readonly known = new Map<string, Runtime>();
  /** Thing names found unknown, so their observations skip the registry: keyed by input, so bounded. */
  private readonly unknown = new LRUCache<string, true>({ max: UNKNOWN_THINGS_CACHE });
  /** Things ranked so far, in name order: `ranked[rt.rank] === rt` while `rt` is ranked. */
  private ranked: Runtime[] = [];

  constructor(
    private readonly resolveThing: ThingResolver,
    private readonly state: StateStore,
  ) {}

  /** The thing's record, made on first sight; undefined for a thing the registry does not know. */
  get(thingName: string): Runtime | undefined {
    const known = this.known.get(thingName);
    if (known !== undefined) return known;
    if (this.unknown.has(thingName)) return undefined;
    const info = this.resolveThing(thingName);
    if (info === undefined) {
      this.unknown.set(thingName, true);
      return undefined;
    }
    let state = this.state.thing(thingName);
    const blank = state === undefined;
    if (state === undefined) {
      // Every field the engine sets later is here from the start: added afterwards, they would
      // cost each thing a second, out-of-object property store.
      state = {
        thingName,
        timestamp: 0,
        state: {},
        seq: 0,
        lastSource: undefined,
        lastOffset: undefined,
        thresholds: undefined,
      };
      this.state.add(state);
    }
    const rt: Runtime = {
      info,
      state,
      hasPos: false,
      lon: 0,
      lat: 0,
      blank,
      dirty: false,
      armed: state.thresholds?.length ?? 0,
      thingType: info.thingType,
      checks: info.checks,
      domain: info.domain,
      domains: info.domains,
      rank: -1,
      plainNames: plainNames(thingName, info.thingType, info.domain),
    };
    const prev: [number, number] = [0, 0];
    if (state.state.latlng !== undefined && readGeoPoint(state.state.latlng, prev)) {
      rt.hasPos = true;
      rt.lon = prev[0];
      rt.lat = prev[1];
    }
    this.known.set(thingName, rt);
    return rt;
  }

  /**
   * `things` (each once) in name order, the state table's, for a checkpoint. Things ranked by an
   * earlier call are ordered by their rank, a sort of numbers without a call per comparison; the
   * others (new since) by name, then merged in, and ranked for the next call.
   */
  byName(things: readonly Runtime[]): Runtime[] {
    const ranked = this.ranked;
    const keys = new Float64Array(things.length);
    let n = 0;
    const fresh: Runtime[] = [];
    for (const rt of things) {
      if (rt.rank >= 0 && ranked[rt.rank] === rt) keys[n++] = rt.rank;
      else fresh.push(rt);
    }
    const order = keys.subarray(0, n).sort();
    const known = new Array<Runtime>(n);
    for (let i = 0; i < n; i++) known[i] = ranked[order[i]!]!;
    if (fresh.length === 0) return known;
    fresh.sort(byThingName);
    this.rank(fresh);
    return merge(known, fresh);
  }

  /** Merges things in name order into the ranked ones, and ranks them all; forgotten things leave. */
  private rank(fresh: readonly Runtime[]): void {
    let ranked = this.ranked;
    let added = fresh;
    // More ranked and fresh than known: some are forgotten (or made again since) and stay out. A
    // thing left out keeps its old rank, which no longer points at it: it is not ranked.
    if (ranked.length + added.length > this.known.size) {
      const live = (rt: Runtime): boolean => this.known.get(rt.state.thingName) === rt;
      ranked = ranked.filter(live);
      added = added.filter(live);
    }
    const all = merge(ranked, added);
    for (let i = 0; i < all.length; i++) all[i]!.rank = i;
    this.ranked = all;
  }

  /** The domain of a thing, for a dead letter: from memory, else the registry. */
  domainOf(thingName: string): string | undefined {
    return this.known.get(thingName)?.domain ?? this.resolveThing(thingName)?.domain;
  }

  /** The thing's last known state (for the rules dry-run and tests). */
  stateOf(thingName: string): ThingState | undefined {
    return this.known.get(thingName)?.state ?? this.state.thing(thingName);
  }

  /** Every thing (undefined) or one: resolved again on its next observation. */
  forget(thingName?: string): void {
    if (thingName === undefined) {
      this.known.clear();
      this.unknown.clear();
    } else {
      this.known.delete(thingName);
      this.unknown.delete(thingName);
    }
  }
}

/**
 * Nested state by (type, id). An item with a type and no id applies to every
 * nested object of that type (SET_RESOURCE on `<type>.<resource>` relies on it).
 */
export function mergeNested(
  current: NestedObservation[] | undefined,
  incoming: readonly NestedObservation[],
): NestedObservation[] {
  const list = current ?? [];
  for (const n of incoming) {
    const type = n.type ?? UNTYPED;
    let found = false;
    for (const c of list) {
      if ((c.type ?? UNTYPED) !== type) continue;
      if (n.id === undefined || c.id === n.id) {
        Object.assign(c.state, n.state);
        found = true;
      }
    }
    if (!found) {
      const copy: NestedObservation = { state: { ...n.state } };
      if (n.type !== undefined) copy.type = n.type;
      if (n.id !== undefined) copy.id = n.id;
      list.push(copy);
    }
  }
  return list;
}
