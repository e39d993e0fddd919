import { randomBytes } from "node:crypto";
import type { Statement } from "better-sqlite3";
import type { EventBus } from "../bus/index.js";
import { ApiError, invalid, notFound } from "../errors/index.js";
import { isoNow, type Db } from "../store/index.js";
import { CredentialsBusyError, DeviceCredentials, generateDeviceSecret, isGeneratedSecret } from "./credentials.js";

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

/** A thing to create or change; `generateSecret` makes dms generate its secret (returned once). */
export interface ThingWrite extends NewThing {
  generateSecret?: boolean | undefined;
}

export type WriteMode = "create" | "update" | "upsert";

export type ThingOutcome =
  | { status: "created" | "updated" | "unchanged"; thing: Thing; secret?: string }
  | { status: "failed"; error: ApiError };

export interface PutThingsOptions {
  mode: WriteMode;
  /** Refuses one thing (throws an ApiError) before anything of it is written: privileges. */
  authorize?: (input: ThingWrite, existing: Thing | undefined) => void;
  /**
   * Written by the provisioning file: an entry whose digest is the one applied
   * last, on a thing nothing else changed since, is skipped without hashing.
   */
  provisioned?: boolean;
  onProgress?: (done: number, total: number) => void;
}

interface KnownReferences {
  domains: Map<string, boolean>;
  types: Map<string, boolean>;
}

/** Things written per transaction (and per turn of the event loop). */
const THING_CHUNK = 500;

interface ThingRow {
  thing_name: string;
  thing_type: string;
  domain: string;
  serial: string | null;
  secret_hash: string | null;
  label: string | null;
  created_at: string;
  updated_at: string;
}

const NAME_PATTERN = /^[0-9A-Za-z_.:-]{1,128}$/;

/** Thing types with their resource definitions, things and thing groups. */
export class ThingRegistry {
  private readonly statements = new Map<string, Statement<unknown[], unknown>>();

  constructor(
    private readonly db: Db,
    private readonly bus: EventBus,
    private readonly domainExists: (id: string) => boolean,
    /** Device secrets' hashing; without one, a random key lives as long as the registry (tests). */
    readonly credentials: DeviceCredentials = new DeviceCredentials({ key: randomBytes(32) }),
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
    const row = this.q<[string], ThingRow>("SELECT * FROM things WHERE thing_name = ?").get(thingName);
    return row && toThing(row);
  }

  thingBySerial(serial: string): Thing | undefined {
    const row = this.q<[string], ThingRow>("SELECT * FROM things WHERE serial = ?").get(serial);
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
  async putThing(input: ThingWrite, mode: WriteMode): Promise<Thing> {
    const [outcome] = await this.putThings([input], { mode });
    if (outcome!.status === "failed") throw outcome!.error;
    return outcome!.thing;
  }

  /**
   * Creates or changes many things, each on its own (one failing does not stop
   * the others), in transactions of `THING_CHUNK` that yield to the event loop
   * between them: a hundred thousand things neither hold the loop nor make
   * one transaction of minutes. Each outcome is at its input's index.
   */
  async putThings(inputs: readonly ThingWrite[], options: PutThingsOptions): Promise<ThingOutcome[]> {
    const outcomes: ThingOutcome[] = [];
    const known: KnownReferences = { domains: new Map(), types: new Map() };
    for (let from = 0; from < inputs.length; from += THING_CHUNK) {
      if (from > 0) await new Promise((resolve) => setImmediate(resolve));
      const chunk = inputs.slice(from, from + THING_CHUNK);
      outcomes.push(...(await this.putChunk(chunk, options, known)));
      options.onProgress?.(outcomes.length, inputs.length);
    }
    return outcomes;
  }

  private async putChunk(
    chunk: readonly ThingWrite[],
    options: PutThingsOptions,
    known: KnownReferences,
  ): Promise<ThingOutcome[]> {
    const { mode, provisioned } = options;
    const names = JSON.stringify(chunk.map((t) => t.thingName));
    const rows = new Map(
      this.q<[string], ThingRow>("SELECT * FROM things WHERE thing_name IN (SELECT value FROM json_each(?))")
        .all(names)
        .map((r) => [r.thing_name, r]),
    );
    const memos = provisioned
      ? new Map(
          this.q<[string], { thing_name: string; digest: string }>(
            "SELECT thing_name, digest FROM thing_provisions WHERE thing_name IN (SELECT value FROM json_each(?))",
          )
            .all(names)
            .map((r) => [r.thing_name, r.digest]),
        )
      : undefined;
    const outcomes = new Array<ThingOutcome>(chunk.length);
    // First what can fail or must wait (names, references, privileges, slow hashes), then one transaction.
    const pending: { index: number; digest?: string; secret?: string; secretHash: Promise<string | null> }[] = [];
    chunk.forEach((input, index) => {
      try {
        if (!NAME_PATTERN.test(input.thingName)) {
          throw invalid("thingName", "1-128 characters of 0-9, A-Z, a-z, '_', '.', ':' or '-'");
        }
        this.checkReferences(input, known);
        const row = rows.get(input.thingName);
        const existing = row && toThing(row);
        checkMode(input.thingName, existing, mode);
        options.authorize?.(input, existing);
        let digest: string | undefined;
        if (memos) {
          const { thingName, thingType, domain, serial, secret, label } = input;
          digest = this.credentials.entryDigest({ thingName, thingType, domain, serial, secret, label });
          if (existing && memos.get(thingName) === digest) {
            outcomes[index] = { status: "unchanged", thing: existing };
            return;
          }
        }
        const secret = input.generateSecret ? generateDeviceSecret() : input.secret;
        const secretHash = secret === undefined ? null : this.secretHashFor(input.thingName, secret, row?.secret_hash);
        pending.push({
          index,
          digest,
          secret: input.generateSecret ? secret : undefined,
          secretHash: Promise.resolve(secretHash),
        });
      } catch (err) {
        outcomes[index] = failed(err);
      }
    });
    const hashes = await Promise.allSettled(pending.map((p) => p.secretHash));
    const events: { thingName: string; change: "created" | "updated" }[] = [];
    this.db.transaction(() => {
      pending.forEach((p, n) => {
        const input = chunk[p.index]!;
        const hashed = hashes[n]!;
        try {
          if (hashed.status === "rejected") throw hashed.reason;
          // Checked again: another write may have come between the reads above and this transaction.
          const existing = this.checkThing(input, mode);
          const change = this.writeThing(input, existing, hashed.value);
          if (p.digest !== undefined) {
            this.q(
              `INSERT INTO thing_provisions (thing_name, digest) VALUES (?, ?)
               ON CONFLICT(thing_name) DO UPDATE SET digest = excluded.digest`,
            ).run(input.thingName, p.digest);
          } else if (change !== "unchanged") {
            // Changed by another hand than the file's: the next start applies the file's entry again.
            this.q("DELETE FROM thing_provisions WHERE thing_name = ?").run(input.thingName);
          }
          if (change !== "unchanged") events.push({ thingName: input.thingName, change });
          const thing = change === "unchanged" ? existing! : this.thing(input.thingName)!;
          outcomes[p.index] =
            p.secret === undefined ? { status: change, thing } : { status: change, thing, secret: p.secret };
        } catch (err) {
          outcomes[p.index] = failed(err);
        }
      });
      // In the transaction, so that the relay's copy of each change commits with it.
      for (const e of events) this.bus.emit("thing.changed", e);
    })();
    return outcomes;
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

  /** The domain and thing type exist (remembered in `known` for the rest of a bulk call). */
  private checkReferences(input: NewThing, known?: KnownReferences): void {
    let domain = known?.domains.get(input.domain);
    if (domain === undefined) {
      domain = this.domainExists(input.domain);
      known?.domains.set(input.domain, domain);
    }
    if (!domain) throw notFound("DOMAIN_NOT_FOUND", `Domain ${input.domain}`, "domain");
    let type = known?.types.get(input.thingType);
    if (type === undefined) {
      type =
        this.q<[string], { id: string }>("SELECT id FROM thing_types WHERE id = ?").get(input.thingType) !== undefined;
      known?.types.set(input.thingType, type);
    }
    if (!type) throw notFound("THING_TYPE_NOT_FOUND", `Thing type ${input.thingType}`, "thingType");
  }

  private checkThing(input: NewThing, mode: WriteMode): Thing | undefined {
    this.checkReferences(input);
    const existing = this.thing(input.thingName);
    checkMode(input.thingName, existing, mode);
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

  /**
   * Checks a device's credentials (MQTT); a thing without a secret cannot
   * connect. A generated secret answers at once; a chosen one may wait for a
   * KDF slot (`CredentialsBusyError` when too many wait).
   */
  async verifyThingSecret(thingName: string, secret: string): Promise<boolean> {
    const stored = this.storedHash(thingName);
    if (!stored) return false;
    const verdict = await this.credentials.verify(thingName, secret, stored);
    if (verdict.upgrade) {
      // Only if nobody changed the secret meanwhile; no event: the secret is the same, only its hash moved.
      this.q("UPDATE things SET secret_hash = ? WHERE thing_name = ? AND secret_hash = ?").run(
        verdict.upgrade,
        thingName,
        stored,
      );
    }
    return verdict.ok;
  }

  /**
   * The hash to store for `secret`: the stored one when it already is this
   * secret's (a chosen secret's scrypt hash is salted, so it is checked, not
   * recomputed), else a new one.
   */
  private secretHashFor(
    thingName: string,
    secret: string,
    stored: string | null | undefined,
  ): string | Promise<string> {
    if (isGeneratedSecret(secret) || !stored?.startsWith("scrypt$")) return this.credentials.hash(thingName, secret);
    return Promise.resolve(this.credentials.verify(thingName, secret, stored)).then((v) =>
      v.ok ? stored : this.credentials.hash(thingName, secret),
    );
  }

  private storedHash(thingName: string): string | null | undefined {
    return this.q<[string], { secret_hash: string | null }>("SELECT secret_hash FROM things WHERE thing_name = ?").get(
      thingName,
    )?.secret_hash;
  }

  /** A prepared statement, prepared once per SQL text: bulk writes run several per thing. */
  private q<P extends unknown[] = unknown[], R = unknown>(sql: string): Statement<P, R> {
    let statement = this.statements.get(sql) as Statement<P, R> | undefined;
    if (!statement) {
      statement = this.db.prepare<P, R>(sql);
      this.statements.set(sql, statement as unknown as Statement<unknown[], unknown>);
    }
    return statement;
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

function checkMode(thingName: string, existing: Thing | undefined, mode: WriteMode): void {
  if (existing && mode === "create") {
    throw new ApiError("ALREADY_EXISTS", `Thing ${thingName} already exists`, "thingName");
  }
  if (!existing && mode === "update") throw notFound("THING_NOT_FOUND", `Thing ${thingName}`, "thingName");
}

/** An ApiError becomes the item's outcome; anything else is a fault of dms and fails the whole call. */
function failed(err: unknown): ThingOutcome {
  if (err instanceof ApiError) return { status: "failed", error: err };
  if (err instanceof CredentialsBusyError) {
    const busy = new ApiError("INTERNAL_ERROR", "Too many device secrets being hashed; try again", "secret", 503);
    return { status: "failed", error: busy };
  }
  throw err;
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
