import type { ResourceDefinition, Thing, ThingGroup, ThingType } from "./types.js";

/** A time as a store reads it: SQLite's ISO 8601 text, PostgreSQL's timestamptz. */
type StoredTime = string | Date;

/** A `things` row, on either database. */
export interface ThingRow {
  thing_name: string;
  thing_type: string;
  domain: string;
  serial: string | null;
  secret_hash: string | null;
  label: string | null;
  created_at: StoredTime;
  updated_at: StoredTime;
}

/** A `thing_types` or `thing_groups` row (a type has a label, a group a name). */
export interface HeaderRow {
  id: string;
  name: string;
  label: string;
  domain: string;
  created_at: StoredTime;
  updated_at: StoredTime;
}

const iso = (t: StoredTime): string => (typeof t === "string" ? t : t.toISOString());

export function toThing(row: ThingRow): Thing {
  return {
    thingName: row.thing_name,
    thingType: row.thing_type,
    domain: row.domain,
    serial: row.serial,
    label: row.label,
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
  };
}

export function toThingType(row: HeaderRow, resources: ResourceDefinition[]): ThingType {
  const { id, label, domain } = row;
  return { id, label, domain, resources, createdAt: iso(row.created_at), updatedAt: iso(row.updated_at) };
}

export function toGroup(row: HeaderRow, things: string[]): ThingGroup {
  const { id, name, domain } = row;
  return { id, name, domain, things, createdAt: iso(row.created_at), updatedAt: iso(row.updated_at) };
}

/** The items by `key`, each list in the items' order. */
export function groupBy<T>(items: Iterable<T>, key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    let list = groups.get(k);
    if (!list) groups.set(k, (list = []));
    list.push(item);
  }
  return groups;
}
