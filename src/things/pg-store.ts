import { pgTransaction, type PgPool, type PgQueryable } from "../store/index.js";
import { writeThingBatch } from "./pg-write.js";
import type { StoredThing, ThingSnapshot, ThingStore, ThingWriteItem, ThingWriteResult } from "./store.js";
import { groupBy, toGroup, toThing, toThingType, type HeaderRow, type ThingRow } from "./rows.js";
import type { GroupHeader, ResourceDefinition, ThingGroup, ThingType } from "./types.js";

/** Names in byte order, as SQLite sorts them, whatever the database's locale. */
const BYTE_ORDER = 'COLLATE "C"';

/** Thing types, things, groups and device credentials in PostgreSQL (`thingsPgMigrations`). */
export class PgThingStore implements ThingStore {
  constructor(private readonly pool: PgPool) {}

  // ---- reads ----

  async loadAll(): Promise<ThingSnapshot> {
    const [types, resources, things, groups, members] = await Promise.all([
      this.pool.query<HeaderRow>(`SELECT * FROM thing_types ORDER BY id ${BYTE_ORDER}`),
      this.pool.query<ResourceDefinition & { thing_type: string }>(
        `SELECT thing_type, name, data_type AS "dataType", resource_type AS "resourceType"
         FROM thing_type_resources ORDER BY name ${BYTE_ORDER}`,
      ),
      this.pool.query<ThingRow>(`SELECT * FROM things ORDER BY thing_name ${BYTE_ORDER}`),
      this.pool.query<HeaderRow>(`SELECT * FROM thing_groups ORDER BY id ${BYTE_ORDER}`),
      this.pool.query<{ group_id: string; thing_name: string }>(
        `SELECT group_id, thing_name FROM thing_group_members ORDER BY thing_name ${BYTE_ORDER}`,
      ),
    ]);
    const byType = groupBy(resources.rows, (r) => r.thing_type);
    const byGroup = groupBy(members.rows, (m) => m.group_id);
    return {
      thingTypes: types.rows.map((row) =>
        toThingType(
          row,
          (byType.get(row.id) ?? []).map(({ name, dataType, resourceType }) => ({ name, dataType, resourceType })),
        ),
      ),
      things: things.rows.map(toThing),
      groups: groups.rows.map((row) =>
        toGroup(
          row,
          (byGroup.get(row.id) ?? []).map((m) => m.thing_name),
        ),
      ),
    };
  }

  readThingType(id: string): Promise<ThingType | undefined> {
    return thingType(this.pool, id);
  }

  async readGroup(groupId: string): Promise<ThingGroup | undefined> {
    const { rows } = await this.pool.query<HeaderRow>("SELECT * FROM thing_groups WHERE id = $1", [groupId]);
    const row = rows[0];
    if (!row) return undefined;
    const members = await this.pool.query<{ thing_name: string }>(
      `SELECT thing_name FROM thing_group_members WHERE group_id = $1 ORDER BY thing_name ${BYTE_ORDER}`,
      [groupId],
    );
    return toGroup(
      row,
      members.rows.map((m) => m.thing_name),
    );
  }

  // ---- thing types ----

  async putThingType(type: Omit<ThingType, "createdAt" | "updatedAt">): Promise<ThingType> {
    return pgTransaction(this.pool, async (tx) => {
      await tx.query(
        `INSERT INTO thing_types (id, label, domain, created_at, updated_at) VALUES ($1, $2, $3, now(), now())
         ON CONFLICT (id) DO UPDATE SET label = excluded.label, domain = excluded.domain, updated_at = excluded.updated_at`,
        [type.id, type.label, type.domain],
      );
      await tx.query("DELETE FROM thing_type_resources WHERE thing_type = $1", [type.id]);
      await tx.query(
        `INSERT INTO thing_type_resources (thing_type, name, data_type, resource_type)
         SELECT $1, * FROM unnest($2::text[], $3::text[], $4::text[])`,
        [
          type.id,
          type.resources.map((r) => r.name),
          type.resources.map((r) => r.dataType),
          type.resources.map((r) => r.resourceType),
        ],
      );
      return (await thingType(tx, type.id))!;
    });
  }

  async deleteThingType(id: string): Promise<number> {
    return pgTransaction(this.pool, async (tx) => {
      // Locks the type, so that no thing of it is written between the count and the delete.
      await tx.query("SELECT id FROM thing_types WHERE id = $1 FOR UPDATE", [id]);
      const { rows } = await tx.query<{ n: number }>("SELECT count(*)::int AS n FROM things WHERE thing_type = $1", [
        id,
      ]);
      const n = rows[0]!.n;
      if (n === 0) await tx.query("DELETE FROM thing_types WHERE id = $1", [id]);
      return n;
    });
  }

  // ---- things ----

  async storedThings(thingNames: readonly string[]): Promise<Map<string, StoredThing>> {
    const { rows } = await this.pool.query<ThingRow>("SELECT * FROM things WHERE thing_name = ANY($1::text[])", [
      thingNames,
    ]);
    return new Map(rows.map((r) => [r.thing_name, { thing: toThing(r), secretHash: r.secret_hash }]));
  }

  async provisionDigests(thingNames: readonly string[]): Promise<Map<string, string>> {
    const { rows } = await this.pool.query<{ thing_name: string; digest: string }>(
      "SELECT thing_name, digest FROM thing_provisions WHERE thing_name = ANY($1::text[])",
      [thingNames],
    );
    return new Map(rows.map((r) => [r.thing_name, r.digest]));
  }

  async writeThings(items: readonly ThingWriteItem[]): Promise<ThingWriteResult[]> {
    if (items.length === 0) return [];
    return pgTransaction(this.pool, (tx) => writeThingBatch(tx, items));
  }

  async deleteThing(thingName: string): Promise<void> {
    await this.pool.query("DELETE FROM things WHERE thing_name = $1", [thingName]);
  }

  async secretHash(thingName: string): Promise<string | null | undefined> {
    const { rows } = await this.pool.query<{ secret_hash: string | null }>(
      "SELECT secret_hash FROM things WHERE thing_name = $1",
      [thingName],
    );
    return rows[0]?.secret_hash;
  }

  async upgradeSecretHash(thingName: string, expected: string, next: string): Promise<void> {
    await this.pool.query("UPDATE things SET secret_hash = $1 WHERE thing_name = $2 AND secret_hash = $3", [
      next,
      thingName,
      expected,
    ]);
  }

  // ---- groups ----

  async groupClash(id: string, name: string): Promise<GroupHeader | undefined> {
    const { rows } = await this.pool.query<GroupHeader>(
      "SELECT id, name, domain FROM thing_groups WHERE id <> $1 AND (name = $1 OR name = $2 OR id = $2) LIMIT 1",
      [id, name],
    );
    return rows[0];
  }

  async putGroup(group: GroupHeader): Promise<ThingGroup> {
    await this.pool.query(
      `INSERT INTO thing_groups (id, name, domain, created_at, updated_at) VALUES ($1, $2, $3, now(), now())
       ON CONFLICT (id) DO UPDATE SET name = excluded.name, domain = excluded.domain, updated_at = excluded.updated_at`,
      [group.id, group.name, group.domain],
    );
    return (await this.readGroup(group.id))!;
  }

  async deleteGroup(groupId: string): Promise<void> {
    await this.pool.query("DELETE FROM thing_groups WHERE id = $1", [groupId]);
  }

  async addMembers(groupId: string, thingNames: readonly string[]): Promise<string[]> {
    const { rows } = await this.pool.query<{ thing_name: string }>(
      `INSERT INTO thing_group_members (group_id, thing_name, added_at)
       SELECT $1, n, now() FROM unnest($2::text[]) WITH ORDINALITY AS u(n, i) ORDER BY i
       ON CONFLICT DO NOTHING RETURNING thing_name`,
      [groupId, thingNames],
    );
    return inGivenOrder(thingNames, rows);
  }

  async removeMembers(groupId: string, thingNames: readonly string[]): Promise<string[]> {
    const { rows } = await this.pool.query<{ thing_name: string }>(
      "DELETE FROM thing_group_members WHERE group_id = $1 AND thing_name = ANY($2::text[]) RETURNING thing_name",
      [groupId, thingNames],
    );
    return inGivenOrder(thingNames, rows);
  }
}

async function thingType(db: PgQueryable, id: string): Promise<ThingType | undefined> {
  const { rows } = await db.query<HeaderRow>("SELECT * FROM thing_types WHERE id = $1", [id]);
  const row = rows[0];
  if (!row) return undefined;
  const resources = await db.query<ResourceDefinition>(
    `SELECT name, data_type AS "dataType", resource_type AS "resourceType"
     FROM thing_type_resources WHERE thing_type = $1 ORDER BY name ${BYTE_ORDER}`,
    [id],
  );
  return toThingType(row, resources.rows);
}

function inGivenOrder(thingNames: readonly string[], rows: readonly { thing_name: string }[]): string[] {
  const done = new Set(rows.map((r) => r.thing_name));
  return thingNames.filter((t) => done.delete(t));
}
