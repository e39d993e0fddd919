import { ApiError, notFound } from "../errors/index.js";
import { toThing, type ThingRow } from "./rows.js";
import { checkMode, type ThingWriteItem, type ThingWriteResult } from "./store.js";
import type { NewThing, Thing } from "./types.js";

/** What a batch's decisions start from, read in its transaction with the stored things locked. */
export interface BatchReads {
  /** The stored rows of the batch's names. */
  stored: ReadonlyMap<string, ThingRow>;
  /** Which of the batch's thing types exist. */
  thingTypes: ReadonlySet<string>;
  /** The things holding the serials the batch claims. */
  serialHolders: ReadonlyMap<string, string>;
  /** The transaction's time, which the database writes as created and updated times. */
  now: Date;
}

/** The rows a batch leaves, one per thing name however many of its items wrote it. */
export interface BatchPlan {
  results: ThingWriteResult[];
  /** Things that were not stored, as the batch leaves them. */
  inserts: ThingRow[];
  /** Stored things the batch changed, as it leaves them. */
  updates: ThingRow[];
  /** The provisioning file's digests to remember, by thing name. */
  digests: Map<string, string>;
  /** Things another hand changed: their digests are forgotten. */
  forgotten: Set<string>;
}

/**
 * Decides a batch as if its items were written one after the other, as `ThingStore.writeThings`
 * says: each item sees what the items before it wrote (a name written twice, a serial claimed
 * twice), so the batch can be written with one statement per table.
 */
export function planBatch(items: readonly ThingWriteItem[], reads: BatchReads): BatchPlan {
  const current = new Map(reads.stored);
  const holders = new Map(reads.serialHolders);
  const written = new Set<string>();
  const digests = new Map<string, string>();
  const forgotten = new Set<string>();
  const results = items.map((item): ThingWriteResult => {
    const { input } = item;
    const existing = current.get(input.thingName);
    try {
      check(item, existing && toThing(existing), reads.thingTypes, holders);
    } catch (err) {
      if (err instanceof ApiError) return { error: err };
      throw err;
    }
    if (existing && unchanged(input, existing, item.secretHash)) {
      if (item.digest !== undefined) remember(input.thingName, item.digest);
      return { change: "unchanged", thing: toThing(existing) };
    }
    const row = rowAfter(item, existing, reads.now);
    if (existing?.serial && existing.serial !== row.serial) holders.delete(existing.serial);
    if (row.serial !== null) holders.set(row.serial, row.thing_name);
    current.set(input.thingName, row);
    written.add(input.thingName);
    if (item.digest !== undefined) remember(input.thingName, item.digest);
    else {
      // Changed by another hand than the file's: the next start applies the file's entry again.
      digests.delete(input.thingName);
      forgotten.add(input.thingName);
    }
    return { change: existing ? "updated" : "created", thing: toThing(row) };
  });

  function remember(thingName: string, digest: string): void {
    forgotten.delete(thingName);
    digests.set(thingName, digest);
  }

  const inserts: ThingRow[] = [];
  const updates: ThingRow[] = [];
  for (const thingName of written) {
    (reads.stored.has(thingName) ? updates : inserts).push(current.get(thingName)!);
  }
  return { results, inserts, updates, digests, forgotten };
}

/** The checks of one item against the batch so far: thing type, write mode, serial held by another thing. */
function check(
  item: ThingWriteItem,
  existing: Thing | undefined,
  thingTypes: ReadonlySet<string>,
  holders: ReadonlyMap<string, string>,
): void {
  const { input } = item;
  if (!thingTypes.has(input.thingType)) {
    throw notFound("THING_TYPE_NOT_FOUND", `Thing type ${input.thingType}`, "thingType");
  }
  checkMode(input.thingName, existing, item.mode);
  if (input.serial !== undefined) {
    const other = holders.get(input.serial);
    if (other !== undefined && other !== input.thingName) {
      throw new ApiError("ALREADY_EXISTS", `Serial ${input.serial} belongs to thing ${other}`, "serial");
    }
  }
}

/** The stored thing already holds the item's values (an absent serial, label or secret keeps the stored one). */
export function unchanged(input: NewThing, stored: ThingRow, secretHash: string | null): boolean {
  return (
    stored.thing_type === input.thingType &&
    stored.domain === input.domain &&
    (input.serial === undefined || input.serial === stored.serial) &&
    (input.label === undefined || input.label === stored.label) &&
    (secretHash === null || secretHash === stored.secret_hash)
  );
}

/** The row the item writes: absent serial, label and secret keep the stored ones. */
function rowAfter(item: ThingWriteItem, existing: ThingRow | undefined, now: Date): ThingRow {
  const { input } = item;
  return {
    thing_name: input.thingName,
    thing_type: input.thingType,
    domain: input.domain,
    serial: input.serial ?? existing?.serial ?? null,
    secret_hash: item.secretHash ?? existing?.secret_hash ?? null,
    label: input.label ?? existing?.label ?? null,
    created_at: existing?.created_at ?? now,
    updated_at: now,
  };
}
