import { ApiError, notFound } from "../errors/index.js";
import { isoNow, statementCache, type Db } from "../store/index.js";
import {
  checkMode,
  type StoredThing,
  type ThingSnapshot,
  type ThingStore,
  type ThingWriteItem,
  type ThingWriteResult,
} from "./store.js";
import { groupBy, toGroup, toThing, toThingType, type HeaderRow, type ThingRow } from "./rows.js";
import type { GroupHeader, NewThing, ResourceDefinition, Thing, ThingGroup, ThingType } from "./types.js";

/** Thing types, things and groups in the process's SQLite database (`thingsMigrations`). */
export class SqliteThingStore implements ThingStore {
  /** Each SQL text prepared once: bulk writes run several per thing. */
  private readonly q;

  constructor(private readonly db: Db) {
    this.q = statementCache(db);
  }

  // ---- reads ----

  async loadAll(): Promise<ThingSnapshot> {
    const resources = groupBy(
      this.q<[], ResourceDefinition & { thingType: string }>(
        `SELECT thing_type AS thingType, name, data_type AS dataType, resource_type AS resourceType
         FROM thing_type_resources ORDER BY thing_type, name`,
      ).iterate(),
      (r) => r.thingType,
    );
    const thingTypes = this.q<[], HeaderRow>("SELECT * FROM thing_types ORDER BY id")
      .all()
      .map((row) =>
        toThingType(
          row,
          (resources.get(row.id) ?? []).map(({ name, dataType, resourceType }) => ({ name, dataType, resourceType })),
        ),
      );
    const things = this.q<[], ThingRow>("SELECT * FROM things ORDER BY thing_name").all().map(toThing);
    const members = groupBy(
      this.q<[], { group_id: string; thing_name: string }>(
        "SELECT group_id, thing_name FROM thing_group_members ORDER BY group_id, thing_name",
      ).iterate(),
      (m) => m.group_id,
    );
    const groups = this.q<[], HeaderRow>("SELECT * FROM thing_groups ORDER BY id")
      .all()
      .map((row) =>
        toGroup(
          row,
          (members.get(row.id) ?? []).map((m) => m.thing_name),
        ),
      );
    return { thingTypes, things, groups };
  }

  async readThingType(id: string): Promise<ThingType | undefined> {
    return this.thingType(id);
  }

  async readGroup(groupId: string): Promise<ThingGroup | undefined> {
    const row = this.q<[string], HeaderRow>("SELECT * FROM thing_groups WHERE id = ?").get(groupId);
    return row && toGroup(row, this.members(row.id));
  }

  // ---- thing types ----

  async putThingType(type: Omit<ThingType, "createdAt" | "updatedAt">): Promise<ThingType> {
    const now = isoNow();
    return this.db.transaction(() => {
      this.q(
        `INSERT INTO thing_types (id, label, domain, created_at, updated_at) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT(id) DO UPDATE SET label = excluded.label, domain = excluded.domain, updated_at = excluded.updated_at`,
      ).run(type.id, type.label, type.domain, now, now);
      this.q("DELETE FROM thing_type_resources WHERE thing_type = ?").run(type.id);
      const insert = this.q(
        "INSERT INTO thing_type_resources (thing_type, name, data_type, resource_type) VALUES (?, ?, ?, ?)",
      );
      for (const r of type.resources) insert.run(type.id, r.name, r.dataType, r.resourceType);
      return this.thingType(type.id)!;
    })();
  }

  async deleteThingType(id: string): Promise<number> {
    return this.db.transaction(() => {
      const { n } = this.q<[string], { n: number }>("SELECT count(*) AS n FROM things WHERE thing_type = ?").get(id)!;
      if (n === 0) this.q("DELETE FROM thing_types WHERE id = ?").run(id);
      return n;
    })();
  }

  // ---- things ----

  async storedThings(thingNames: readonly string[]): Promise<Map<string, StoredThing>> {
    return new Map(
      this.q<[string], ThingRow>("SELECT * FROM things WHERE thing_name IN (SELECT value FROM json_each(?))")
        .all(JSON.stringify(thingNames))
        .map((r) => [r.thing_name, { thing: toThing(r), secretHash: r.secret_hash }]),
    );
  }

  async provisionDigests(thingNames: readonly string[]): Promise<Map<string, string>> {
    return new Map(
      this.q<[string], { thing_name: string; digest: string }>(
        "SELECT thing_name, digest FROM thing_provisions WHERE thing_name IN (SELECT value FROM json_each(?))",
      )
        .all(JSON.stringify(thingNames))
        .map((r) => [r.thing_name, r.digest]),
    );
  }

  async writeThings(items: readonly ThingWriteItem[]): Promise<ThingWriteResult[]> {
    return this.db.transaction(() =>
      items.map((item): ThingWriteResult => {
        const { input } = item;
        try {
          const existing = this.checkThing(input, item);
          const change = this.writeThing(input, existing, item.secretHash);
          if (item.digest !== undefined) {
            this.q(
              `INSERT INTO thing_provisions (thing_name, digest) VALUES (?, ?)
               ON CONFLICT(thing_name) DO UPDATE SET digest = excluded.digest`,
            ).run(input.thingName, item.digest);
          } else if (change !== "unchanged") {
            // Changed by another hand than the file's: the next start applies the file's entry again.
            this.q("DELETE FROM thing_provisions WHERE thing_name = ?").run(input.thingName);
          }
          return { change, thing: change === "unchanged" ? existing! : this.thing(input.thingName)! };
        } catch (err) {
          if (err instanceof ApiError) return { error: err };
          throw err;
        }
      }),
    )();
  }

  async deleteThing(thingName: string): Promise<void> {
    this.q("DELETE FROM things WHERE thing_name = ?").run(thingName);
  }

  async secretHash(thingName: string): Promise<string | null | undefined> {
    return this.storedHash(thingName);
  }

  async upgradeSecretHash(thingName: string, expected: string, next: string): Promise<void> {
    this.q("UPDATE things SET secret_hash = ? WHERE thing_name = ? AND secret_hash = ?").run(next, thingName, expected);
  }

  // ---- groups ----

  async groupClash(id: string, name: string): Promise<GroupHeader | undefined> {
    return this.q<[{ id: string; name: string }], GroupHeader>(
      `SELECT id, name, domain FROM thing_groups WHERE id <> @id AND (name = @id OR name = @name OR id = @name) LIMIT 1`,
    ).get({ id, name });
  }

  async putGroup(group: GroupHeader): Promise<ThingGroup> {
    const now = isoNow();
    this.q(
      `INSERT INTO thing_groups (id, name, domain, created_at, updated_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT(id) DO UPDATE SET name = excluded.name, domain = excluded.domain, updated_at = excluded.updated_at`,
    ).run(group.id, group.name, group.domain, now, now);
    return (await this.readGroup(group.id))!;
  }

  async deleteGroup(groupId: string): Promise<void> {
    this.q("DELETE FROM thing_groups WHERE id = ?").run(groupId);
  }

  async addMembers(groupId: string, thingNames: readonly string[]): Promise<string[]> {
    const insert = this.q(
      "INSERT OR IGNORE INTO thing_group_members (group_id, thing_name, added_at) VALUES (?, ?, ?)",
    );
    const now = isoNow();
    return this.db.transaction(() => thingNames.filter((t) => insert.run(groupId, t, now).changes > 0))();
  }

  async removeMembers(groupId: string, thingNames: readonly string[]): Promise<string[]> {
    const del = this.q("DELETE FROM thing_group_members WHERE group_id = ? AND thing_name = ?");
    return this.db.transaction(() => thingNames.filter((t) => del.run(groupId, t).changes > 0))();
  }

  // ---- internals ----

  private thingType(id: string): ThingType | undefined {
    const row = this.q<[string], HeaderRow>("SELECT * FROM thing_types WHERE id = ?").get(id);
    if (!row) return undefined;
    const resources = this.q<[string], ResourceDefinition>(
      `SELECT name, data_type AS dataType, resource_type AS resourceType
       FROM thing_type_resources WHERE thing_type = ? ORDER BY name`,
    ).all(id);
    return toThingType(row, resources);
  }

  private thing(thingName: string): Thing | undefined {
    const row = this.q<[string], ThingRow>("SELECT * FROM things WHERE thing_name = ?").get(thingName);
    return row && toThing(row);
  }

  private thingBySerial(serial: string): Thing | undefined {
    const row = this.q<[string], ThingRow>("SELECT * FROM things WHERE serial = ?").get(serial);
    return row && toThing(row);
  }

  private members(groupId: string): string[] {
    return this.q<[string], { thing_name: string }>(
      "SELECT thing_name FROM thing_group_members WHERE group_id = ? ORDER BY thing_name",
    )
      .all(groupId)
      .map((r) => r.thing_name);
  }

  /** The checks of a write inside its transaction: thing type, mode, serial held by another thing. */
  private checkThing(input: NewThing, item: ThingWriteItem): Thing | undefined {
    if (
      this.q<[string], { id: string }>("SELECT id FROM thing_types WHERE id = ?").get(input.thingType) === undefined
    ) {
      throw notFound("THING_TYPE_NOT_FOUND", `Thing type ${input.thingType}`, "thingType");
    }
    const existing = this.thing(input.thingName);
    checkMode(input.thingName, existing, item.mode);
    if (input.serial !== undefined) {
      const holder = this.thingBySerial(input.serial);
      if (holder && holder.thingName !== input.thingName) {
        throw new ApiError("ALREADY_EXISTS", `Serial ${input.serial} belongs to thing ${holder.thingName}`, "serial");
      }
    }
    return existing;
  }

  /** Writes the thing unless it already holds these values; `secretHash` null keeps the stored one. */
  private writeThing(
    input: NewThing,
    existing: Thing | undefined,
    secretHash: string | null,
  ): "created" | "updated" | "unchanged" {
    if (
      existing &&
      existing.thingType === input.thingType &&
      existing.domain === input.domain &&
      (input.serial === undefined || input.serial === existing.serial) &&
      (input.label === undefined || input.label === existing.label) &&
      (secretHash === null || secretHash === this.storedHash(input.thingName))
    ) {
      return "unchanged";
    }
    const now = isoNow();
    this.q(
      `INSERT INTO things (thing_name, thing_type, domain, serial, secret_hash, label, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT(thing_name) DO UPDATE SET thing_type = excluded.thing_type, domain = excluded.domain,
         serial = COALESCE(excluded.serial, serial), secret_hash = COALESCE(excluded.secret_hash, secret_hash),
         label = COALESCE(excluded.label, label), updated_at = excluded.updated_at`,
    ).run(
      input.thingName,
      input.thingType,
      input.domain,
      input.serial ?? null,
      secretHash,
      input.label ?? null,
      now,
      now,
    );
    return existing ? "updated" : "created";
  }

  private storedHash(thingName: string): string | null | undefined {
    return this.q<[string], { secret_hash: string | null }>("SELECT secret_hash FROM things WHERE thing_name = ?").get(
      thingName,
    )?.secret_hash;
  }
}
