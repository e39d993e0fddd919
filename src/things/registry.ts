import type { EventBus } from "../bus/index.js";
import { ApiError, invalid, notFound } from "../errors/index.js";
import { hashSecret, verifySecret } from "../auth/index.js";
import { isoNow, type Db } from "../store/index.js";

export const DATA_TYPES = ["long", "double", "string", "boolean", "geo_point", "date", "unknown"] as const;
export const RESOURCE_TYPES = ["thing", "sub-thing", "virtual", "platform"] as const;
export type DataType = (typeof DATA_TYPES)[number];
export type ResourceType = (typeof RESOURCE_TYPES)[number];

export interface ResourceDefinition {
  name: string;
  dataType: DataType;
  resourceType: ResourceType;
}

export interface ThingType {
  id: string;
  label: string;
  domain: string;
  resources: ResourceDefinition[];
  createdAt: string;
  updatedAt: string;
}

export interface Thing {
  thingName: string;
  thingType: string;
  domain: string;
  serial: string | null;
  label: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface ThingGroup {
  id: string;
  name: string;
  domain: string;
  things: string[];
  createdAt: string;
  updatedAt: string;
}

export interface NewThing {
  thingName: string;
  thingType: string;
  domain: string;
  serial?: string | undefined;
  secret?: string | undefined;
  label?: string | undefined;
}

interface ThingRow {
  thing_name: string;
  thing_type: string;
  domain: string;
  serial: string | null;
  label: string | null;
  created_at: string;
  updated_at: string;
}

const NAME_PATTERN = /^[0-9A-Za-z_.:-]{1,128}$/;

/** Thing types with their resource definitions, things and thing groups. */
export class ThingRegistry {
  constructor(
    private readonly db: Db,
    private readonly bus: EventBus,
    private readonly domainExists: (id: string) => boolean,
  ) {}

  // ---- thing types ----

  thingType(id: string): ThingType | undefined {
    const row = this.db
      .prepare<[string], { id: string; label: string; domain: string; created_at: string; updated_at: string }>(
        "SELECT * FROM thing_types WHERE id = ?",
      )
      .get(id);
    if (!row) return undefined;
    const resources = this.db
      .prepare<[string], ResourceDefinition>(
        `SELECT name, data_type AS dataType, resource_type AS resourceType
         FROM thing_type_resources WHERE thing_type = ? ORDER BY name`,
      )
      .all(id);
    return {
      id: row.id,
      label: row.label,
      domain: row.domain,
      resources,
      createdAt: row.created_at,
      updatedAt: row.updated_at,
    };
  }

  thingTypes(): ThingType[] {
    const ids = this.db.prepare<[], { id: string }>("SELECT id FROM thing_types ORDER BY id").all();
    return ids.map((r) => this.thingType(r.id)!);
  }

  /**
   * Creates the thing type, or replaces label, domain and resources of an
   * existing one (`upsert`). Replacing with the same values writes nothing.
   */
  putThingType(input: Omit<ThingType, "createdAt" | "updatedAt">, mode: "create" | "update" | "upsert"): ThingType {
    if (!NAME_PATTERN.test(input.id)) throw invalid("id", "1-128 characters of 0-9, A-Z, a-z, '_', '.', ':' or '-'");
    if (!this.domainExists(input.domain)) throw notFound("DOMAIN_NOT_FOUND", `Domain ${input.domain}`, "domain");
    const names = new Set<string>();
    for (const r of input.resources) {
      if (names.has(r.name)) throw invalid("resources", `resource ${r.name} is defined twice`);
      names.add(r.name);
    }
    const existing = this.thingType(input.id);
    if (existing && mode === "create") {
      throw new ApiError("ALREADY_EXISTS", `Thing type ${input.id} already exists`, "id");
    }
    if (!existing && mode === "update") throw notFound("THING_TYPE_NOT_FOUND", `Thing type ${input.id}`, "id");
    const resources = [...input.resources]
      .sort((x, y) => (x.name < y.name ? -1 : x.name > y.name ? 1 : 0))
      .map(({ name, dataType, resourceType }) => ({ name, dataType, resourceType }));
    if (
      existing &&
      existing.label === input.label &&
      existing.domain === input.domain &&
      JSON.stringify(existing.resources) === JSON.stringify(resources)
    ) {
      return existing;
    }
    const now = isoNow();
    this.db.transaction(() => {
      this.db
        .prepare(
          `INSERT INTO thing_types (id, label, domain, created_at, updated_at) VALUES (?, ?, ?, ?, ?)
           ON CONFLICT(id) DO UPDATE SET label = excluded.label, domain = excluded.domain, updated_at = excluded.updated_at`,
        )
        .run(input.id, input.label, input.domain, now, now);
      this.db.prepare("DELETE FROM thing_type_resources WHERE thing_type = ?").run(input.id);
      const insert = this.db.prepare(
        "INSERT INTO thing_type_resources (thing_type, name, data_type, resource_type) VALUES (?, ?, ?, ?)",
      );
      for (const r of resources) insert.run(input.id, r.name, r.dataType, r.resourceType);
    })();
    this.bus.emit("thingType.changed", { id: input.id, change: existing ? "updated" : "created" });
    return this.thingType(input.id)!;
  }

  deleteThingType(id: string): void {
    if (!this.thingType(id)) throw notFound("THING_TYPE_NOT_FOUND", `Thing type ${id}`, "id");
    const used = this.db
      .prepare<[string], { n: number }>("SELECT count(*) AS n FROM things WHERE thing_type = ?")
      .get(id)!;
    if (used.n > 0) throw invalid("id", `thing type ${id} still has ${used.n} things`);
    this.db.prepare("DELETE FROM thing_types WHERE id = ?").run(id);
    this.bus.emit("thingType.changed", { id, change: "deleted" });
  }

  // ---- things ----

  thing(thingName: string): Thing | undefined {
    const row = this.db.prepare<[string], ThingRow>("SELECT * FROM things WHERE thing_name = ?").get(thingName);
    return row && toThing(row);
  }

  thingBySerial(serial: string): Thing | undefined {
    const row = this.db.prepare<[string], ThingRow>("SELECT * FROM things WHERE serial = ?").get(serial);
    return row && toThing(row);
  }

  things(filter: { thingType?: string; domain?: string } = {}): Thing[] {
    return this.db
      .prepare<[{ type: string | null; domain: string | null }], ThingRow>(
        `SELECT * FROM things WHERE (@type IS NULL OR thing_type = @type) AND (@domain IS NULL OR domain = @domain)
         ORDER BY thing_name`,
      )
      .all({ type: filter.thingType ?? null, domain: filter.domain ?? null })
      .map(toThing);
  }

  /** Creates or changes a thing; `serial`, `secret` and `label` left out keep their value. */
  async putThing(input: NewThing, mode: "create" | "update" | "upsert"): Promise<Thing> {
    if (!NAME_PATTERN.test(input.thingName)) {
      throw invalid("thingName", "1-128 characters of 0-9, A-Z, a-z, '_', '.', ':' or '-'");
    }
    this.checkThing(input, mode);
    const secretHash = input.secret === undefined ? null : await this.secretHashFor(input.thingName, input.secret);
    // Checked again after the await: from here on nothing else runs until the write,
    // so a concurrent create of the same name or serial answers ALREADY_EXISTS, not a constraint error.
    const existing = this.checkThing(input, mode);
    const storedHash = this.db
      .prepare<[string], { secret_hash: string | null }>("SELECT secret_hash FROM things WHERE thing_name = ?")
      .get(input.thingName)?.secret_hash;
    if (
      existing &&
      existing.thingType === input.thingType &&
      existing.domain === input.domain &&
      (input.serial === undefined || input.serial === existing.serial) &&
      (input.label === undefined || input.label === existing.label) &&
      (secretHash === null || secretHash === storedHash)
    ) {
      return existing;
    }
    const now = isoNow();
    this.db
      .prepare(
        `INSERT INTO things (thing_name, thing_type, domain, serial, secret_hash, label, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT(thing_name) DO UPDATE SET thing_type = excluded.thing_type, domain = excluded.domain,
           serial = COALESCE(excluded.serial, serial), secret_hash = COALESCE(excluded.secret_hash, secret_hash),
           label = COALESCE(excluded.label, label), updated_at = excluded.updated_at`,
      )
      .run(
        input.thingName,
        input.thingType,
        input.domain,
        input.serial ?? null,
        secretHash,
        input.label ?? null,
        now,
        now,
      );
    this.bus.emit("thing.changed", { thingName: input.thingName, change: existing ? "updated" : "created" });
    return this.thing(input.thingName)!;
  }

  private checkThing(input: NewThing, mode: "create" | "update" | "upsert"): Thing | undefined {
    if (!this.domainExists(input.domain)) throw notFound("DOMAIN_NOT_FOUND", `Domain ${input.domain}`, "domain");
    if (!this.thingType(input.thingType)) {
      throw notFound("THING_TYPE_NOT_FOUND", `Thing type ${input.thingType}`, "thingType");
    }
    const existing = this.thing(input.thingName);
    if (existing && mode === "create") {
      throw new ApiError("ALREADY_EXISTS", `Thing ${input.thingName} already exists`, "thingName");
    }
    if (!existing && mode === "update") throw notFound("THING_NOT_FOUND", `Thing ${input.thingName}`, "thingName");
    if (input.serial !== undefined) {
      const holder = this.thingBySerial(input.serial);
      if (holder && holder.thingName !== input.thingName) {
        throw new ApiError("ALREADY_EXISTS", `Serial ${input.serial} belongs to thing ${holder.thingName}`, "serial");
      }
    }
    return existing;
  }

  deleteThing(thingName: string): void {
    if (!this.thing(thingName)) throw notFound("THING_NOT_FOUND", `Thing ${thingName}`, "thingName");
    const groups = this.groupsOf(thingName);
    this.db.prepare("DELETE FROM things WHERE thing_name = ?").run(thingName);
    for (const groupId of groups) this.bus.emit("thingGroup.membership", { groupId, thingName, change: "removed" });
    this.bus.emit("thing.changed", { thingName, change: "deleted" });
  }

  /** Checks a device's credentials (MQTT and proxy); a thing without a secret cannot connect. */
  async verifyThingSecret(thingName: string, secret: string): Promise<boolean> {
    const row = this.db
      .prepare<[string], { secret_hash: string | null }>("SELECT secret_hash FROM things WHERE thing_name = ?")
      .get(thingName);
    return row?.secret_hash ? verifySecret(secret, row.secret_hash) : false;
  }

  /** Keeps the stored hash when the secret is unchanged, so provisioning twice does not rehash. */
  private async secretHashFor(thingName: string, secret: string): Promise<string> {
    const row = this.db
      .prepare<[string], { secret_hash: string | null }>("SELECT secret_hash FROM things WHERE thing_name = ?")
      .get(thingName);
    if (row?.secret_hash && (await verifySecret(secret, row.secret_hash))) return row.secret_hash;
    return hashSecret(secret);
  }

  // ---- thing groups ----

  /** A group by id, or else by name: the interface identifies groups by either. */
  group(idOrName: string): ThingGroup | undefined {
    const row = this.db
      .prepare<[{ key: string }], { id: string; name: string; domain: string; created_at: string; updated_at: string }>(
        "SELECT * FROM thing_groups WHERE id = @key OR name = @key ORDER BY id = @key DESC LIMIT 1",
      )
      .get({ key: idOrName });
    if (!row) return undefined;
    return {
      id: row.id,
      name: row.name,
      domain: row.domain,
      things: this.members(row.id),
      createdAt: row.created_at,
      updatedAt: row.updated_at,
    };
  }

  groups(): ThingGroup[] {
    return this.db
      .prepare<[], { id: string }>("SELECT id FROM thing_groups ORDER BY id")
      .all()
      .map((r) => this.group(r.id)!);
  }

  members(groupId: string): string[] {
    return this.db
      .prepare<[string], { thing_name: string }>(
        "SELECT thing_name FROM thing_group_members WHERE group_id = ? ORDER BY thing_name",
      )
      .all(groupId)
      .map((r) => r.thing_name);
  }

  groupsOf(thingName: string): string[] {
    return this.db
      .prepare<[string], { group_id: string }>("SELECT group_id FROM thing_group_members WHERE thing_name = ?")
      .all(thingName)
      .map((r) => r.group_id);
  }

  /**
   * Creates or changes a group; `things`, when given, becomes its exact
   * membership. Ids and names share one namespace, since the interface
   * names a group by either: an id may not be another group's name.
   */
  putGroup(
    input: { id: string; name: string; domain: string; things?: string[] | undefined },
    mode: "create" | "update" | "upsert",
  ): ThingGroup {
    if (!NAME_PATTERN.test(input.id)) throw invalid("id", "1-128 characters of 0-9, A-Z, a-z, '_', '.', ':' or '-'");
    if (!this.domainExists(input.domain)) throw notFound("DOMAIN_NOT_FOUND", `Domain ${input.domain}`, "domain");
    const row = this.db
      .prepare<[string], { id: string; name: string; domain: string }>("SELECT * FROM thing_groups WHERE id = ?")
      .get(input.id);
    if (row && mode === "create") throw new ApiError("ALREADY_EXISTS", `Thing group ${input.id} already exists`, "id");
    if (!row && mode === "update") throw notFound("THING_GROUP_NOT_FOUND", `Thing group ${input.id}`, "id");
    const clash = this.db
      .prepare<[{ id: string; name: string }], { id: string; name: string }>(
        `SELECT id, name FROM thing_groups WHERE id <> @id AND (name = @id OR name = @name OR id = @name) LIMIT 1`,
      )
      .get({ id: input.id, name: input.name });
    if (clash) {
      const property = clash.name === input.id ? "id" : "name";
      const value = property === "name" ? input.name : input.id;
      throw new ApiError("ALREADY_EXISTS", `Thing group ${clash.id} already goes by ${value}`, property);
    }
    // Every thing must exist before anything is written, so a bad list leaves no half-made group.
    if (input.things) this.requireThings(input.things);
    if (!row || row.name !== input.name || row.domain !== input.domain) {
      const now = isoNow();
      this.db
        .prepare(
          `INSERT INTO thing_groups (id, name, domain, created_at, updated_at) VALUES (?, ?, ?, ?, ?)
           ON CONFLICT(id) DO UPDATE SET name = excluded.name, domain = excluded.domain, updated_at = excluded.updated_at`,
        )
        .run(input.id, input.name, input.domain, now, now);
    }
    if (input.things) this.setMembers(input.id, input.things);
    return this.group(input.id)!;
  }

  deleteGroup(idOrName: string): void {
    const group = this.group(idOrName);
    if (!group) throw notFound("THING_GROUP_NOT_FOUND", `Thing group ${idOrName}`, "id");
    this.db.prepare("DELETE FROM thing_groups WHERE id = ?").run(group.id);
    for (const thingName of group.things) {
      this.bus.emit("thingGroup.membership", { groupId: group.id, thingName, change: "removed" });
    }
    this.bus.emit("thingGroup.deleted", { groupId: group.id });
  }

  /** Adds things to a group; things already in it are left alone. Returns the ones added. */
  addMembers(groupId: string, thingNames: string[]): string[] {
    this.requireThings(thingNames);
    const insert = this.db.prepare(
      "INSERT OR IGNORE INTO thing_group_members (group_id, thing_name, added_at) VALUES (?, ?, ?)",
    );
    const now = isoNow();
    const added = this.db.transaction(() => thingNames.filter((t) => insert.run(groupId, t, now).changes > 0))();
    for (const thingName of added) this.bus.emit("thingGroup.membership", { groupId, thingName, change: "added" });
    return added;
  }

  removeMembers(groupId: string, thingNames: string[]): string[] {
    const del = this.db.prepare("DELETE FROM thing_group_members WHERE group_id = ? AND thing_name = ?");
    const removed = this.db.transaction(() => thingNames.filter((t) => del.run(groupId, t).changes > 0))();
    for (const thingName of removed) this.bus.emit("thingGroup.membership", { groupId, thingName, change: "removed" });
    return removed;
  }

  private setMembers(groupId: string, thingNames: string[]): void {
    const current = new Set(this.members(groupId));
    const wanted = new Set(thingNames);
    this.removeMembers(
      groupId,
      [...current].filter((t) => !wanted.has(t)),
    );
    this.addMembers(
      groupId,
      [...wanted].filter((t) => !current.has(t)),
    );
  }

  private requireThings(thingNames: string[]): void {
    const missing = thingNames.find((t) => !this.thing(t));
    if (missing !== undefined) throw notFound("THING_NOT_FOUND", `Thing ${missing}`, "things");
  }
}

function toThing(row: ThingRow): Thing {
  return {
    thingName: row.thing_name,
    thingType: row.thing_type,
    domain: row.domain,
    serial: row.serial,
    label: row.label,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}
