import { ApiError, notFound } from "../errors/index.js";
import type { GroupHeader, NewThing, Thing, ThingGroup, ThingType, WriteMode } from "./types.js";

/**
 * The registry's reads that the engine, the MQTT bridge, the proxy and every
 * access check make per message or per request, so they are synchronous:
 * answered from memory (`ThingView`), kept current from the bus
 * (`thing.changed`, `thingType.changed`, `thingGroup.*`), never with a round trip.
 */
export interface ThingLookups {
  thingType(id: string): ThingType | undefined;
  /** By id. */
  thingTypes(): ThingType[];
  thing(thingName: string): Thing | undefined;
  thingBySerial(serial: string): Thing | undefined;
  /** By name; both filters optional. */
  things(filter: { thingType?: string | undefined; domain?: string | undefined }): Thing[];
  /** A group by id, or else by name: the interface identifies groups by either. */
  group(idOrName: string): ThingGroup | undefined;
  /** By id. */
  groups(): ThingGroup[];
  /** Thing names of the group, by name. */
  members(groupId: string): string[];
  groupsOf(thingName: string): string[];
}

/** A thing as stored: with its secret's hash, which only the store and the credentials see. */
export interface StoredThing {
  thing: Thing;
  secretHash: string | null;
}

/** One thing of a `writeThings` batch, its references and privileges already checked, its secret hashed. */
export interface ThingWriteItem {
  input: NewThing;
  mode: WriteMode;
  /** The new secret's hash; null keeps the stored one. */
  secretHash: string | null;
  /** The provisioning file's digest of the entry; undefined: written by another hand, so the file's is forgotten. */
  digest?: string | undefined;
}

export type ThingWriteResult = { change: "created" | "updated" | "unchanged"; thing: Thing } | { error: ApiError };

/** Everything a store holds, as `ThingView` starts from it. */
export interface ThingSnapshot {
  /** By id. */
  thingTypes: ThingType[];
  /** By name. */
  things: Thing[];
  /** By id, each with its members. */
  groups: ThingGroup[];
}

/**
 * Where thing types, things, groups and device credentials are kept. Every method answers
 * asynchronously, as a networked database would, each one atomic operation; what is read
 * synchronously comes from `ThingView`, never from here. The store does not announce changes
 * (the registry does, once they are stored).
 */
export interface ThingStore {
  /** Every thing type, thing and group. */
  loadAll(): Promise<ThingSnapshot>;
  readThingType(id: string): Promise<ThingType | undefined>;
  /** The group of this id with its members. */
  readGroup(groupId: string): Promise<ThingGroup | undefined>;
  /** Creates the type or replaces label, domain and resources, in one transaction; answers it as stored. */
  putThingType(type: Omit<ThingType, "createdAt" | "updatedAt">): Promise<ThingType>;
  /** Deletes the type unless things still are of it; answers how many are (0: deleted). */
  deleteThingType(id: string): Promise<number>;
  /** What a batch's checks read before it is written: the stored things of these names. */
  storedThings(thingNames: readonly string[]): Promise<Map<string, StoredThing>>;
  /** The digests the provisioning file last applied to these things. */
  provisionDigests(thingNames: readonly string[]): Promise<Map<string, string>>;
  /**
   * Writes a batch in one transaction, each thing on its own: checked again
   * inside it (write mode, thing type, serial held by another thing), since
   * another write may have come between the reads and this, and left as it is
   * when it already holds these values. Results at their items' indexes.
   */
  writeThings(items: readonly ThingWriteItem[]): Promise<ThingWriteResult[]>;
  deleteThing(thingName: string): Promise<void>;
  /** undefined: no such thing; null: a thing without a secret. */
  secretHash(thingName: string): Promise<string | null | undefined>;
  /** Replaces the secret's hash only if it still is `expected` (nobody changed the secret meanwhile). */
  upgradeSecretHash(thingName: string, expected: string, next: string): Promise<void>;
  /** Another group whose id or name is `id` or `name` (ids and names share one namespace). */
  groupClash(id: string, name: string): Promise<GroupHeader | undefined>;
  /** Creates the group or changes its name and domain; answers it as stored, with its members. */
  putGroup(group: GroupHeader): Promise<ThingGroup>;
  /** Deletes the group and its memberships. */
  deleteGroup(groupId: string): Promise<void>;
  /** Adds the things not in the group yet; answers those added. */
  addMembers(groupId: string, thingNames: readonly string[]): Promise<string[]>;
  /** Removes the things that were in the group; answers those removed. */
  removeMembers(groupId: string, thingNames: readonly string[]): Promise<string[]>;
}

/** The write mode's refusals: `create` of a thing that exists, `update` of one that does not. */
export function checkMode(thingName: string, existing: Thing | undefined, mode: WriteMode): void {
  if (existing && mode === "create") {
    throw new ApiError("ALREADY_EXISTS", `Thing ${thingName} already exists`, "thingName");
  }
  if (!existing && mode === "update") throw notFound("THING_NOT_FOUND", `Thing ${thingName}`, "thingName");
}
