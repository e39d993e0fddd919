import { randomBytes } from "node:crypto";
import type { EventBus } from "../bus/index.js";
import { ApiError, invalid, notFound } from "../errors/index.js";
import {
  CredentialsBusyError,
  DeviceCredentials,
  MIN_CHOSEN_SECRET_LENGTH,
  generateDeviceSecret,
  isDeviceSecretHash,
  isGeneratedSecret,
} from "./credentials.js";
import { checkMode, type ThingLookups, type ThingStore, type ThingWriteItem } from "./store.js";
import type { PutThingsOptions, Thing, ThingGroup, ThingOutcome, ThingType, ThingWrite, WriteMode } from "./types.js";
import { ThingView } from "./view.js";

interface KnownReferences {
  domains: Map<string, boolean>;
  types: Map<string, boolean>;
}

/** Things written per transaction (and per turn of the event loop). */
const THING_CHUNK = 500;

const NAME_PATTERN = /^[0-9A-Za-z_.:-]{1,128}$/;

/**
 * Thing types with their resource definitions, things and thing groups: the
 * checks and the announcements on the bus around the `ThingStore`. Reads are
 * the view's synchronous lookups; writes resolve once stored, in the view and announced.
 */
export class ThingRegistry implements ThingLookups {
  private constructor(
    private readonly store: ThingStore,
    private readonly view: ThingView,
    private readonly bus: EventBus,
    private readonly domainExists: (id: string) => boolean,
    readonly credentials: DeviceCredentials,
  ) {}

  /** Reads the store into memory (`ThingView`), following the bus from then on. */
  static async open(
    store: ThingStore,
    bus: EventBus,
    domainExists: (id: string) => boolean,
    /** Device secrets' hashing; without one, a random key lives as long as the registry (tests). */
    credentials: DeviceCredentials = new DeviceCredentials({ key: randomBytes(32) }),
  ): Promise<ThingRegistry> {
    return new ThingRegistry(store, await ThingView.open(store, bus), bus, domainExists, credentials);
  }

  /** Stops following the bus. */
  close(): void {
    this.view.close();
  }

  // ---- thing types ----

  thingType(id: string): ThingType | undefined {
    return this.view.thingType(id);
  }

  thingTypes(): ThingType[] {
    return this.view.thingTypes();
  }

  /**
   * Creates the thing type, or replaces label, domain and resources of an
   * existing one (`upsert`). Replacing with the same values writes nothing.
   */
  async putThingType(
    input: Omit<ThingType, "createdAt" | "updatedAt">,
    mode: "create" | "update" | "upsert",
  ): Promise<ThingType> {
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
    const stored = await this.store.putThingType({ id: input.id, label: input.label, domain: input.domain, resources });
    this.view.setThingType(stored);
    this.bus.emit("thingType.changed", { id: input.id, change: existing ? "updated" : "created" });
    return stored;
  }

  async deleteThingType(id: string): Promise<void> {
    if (!this.thingType(id)) throw notFound("THING_TYPE_NOT_FOUND", `Thing type ${id}`, "id");
    const used = await this.store.deleteThingType(id);
    if (used > 0) throw invalid("id", `thing type ${id} still has ${used} things`);
    this.view.removeThingType(id);
    this.bus.emit("thingType.changed", { id, change: "deleted" });
  }

  // ---- things ----

  thing(thingName: string): Thing | undefined {
    return this.view.thing(thingName);
  }

  thingBySerial(serial: string): Thing | undefined {
    return this.view.thingBySerial(serial);
  }

  things(filter: { thingType?: string | undefined; domain?: string | undefined } = {}): Thing[] {
    return this.view.things(filter);
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
      for (const outcome of await this.putChunk(chunk, options, known)) outcomes.push(outcome);
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
    const names = chunk.map((t) => t.thingName);
    const stored = await this.store.storedThings(names);
    const memos = provisioned ? await this.store.provisionDigests(names) : undefined;
    const outcomes = new Array<ThingOutcome>(chunk.length);
    // First what can fail or must wait (names, references, privileges, slow hashes), then one transaction.
    const pending: { index: number; digest?: string; secret?: string; secretHash: Promise<string | null> }[] = [];
    chunk.forEach((input, index) => {
      try {
        if (!NAME_PATTERN.test(input.thingName)) {
          throw invalid("thingName", "1-128 characters of 0-9, A-Z, a-z, '_', '.', ':' or '-'");
        }
        this.checkReferences(input, known);
        const row = stored.get(input.thingName);
        const existing = row?.thing;
        checkMode(input.thingName, existing, mode);
        options.authorize?.(input, existing);
        let digest: string | undefined;
        if (memos) {
          const { thingName, thingType, domain, serial, secret, secretHash, label } = input;
          digest = this.credentials.entryDigest({ thingName, thingType, domain, serial, secret, secretHash, label });
          if (existing && memos.get(thingName) === digest) {
            outcomes[index] = { status: "unchanged", thing: existing };
            return;
          }
        }
        const secret = input.generateSecret ? generateDeviceSecret() : input.secret;
        const secretHash =
          input.secretHash !== undefined
            ? preHashed(input, input.secretHash)
            : secret === undefined
              ? null
              : this.secretHashFor(input.thingName, secret, row?.secretHash);
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
    const items: ThingWriteItem[] = [];
    const written: (typeof pending)[number][] = [];
    pending.forEach((p, n) => {
      const hashed = hashes[n]!;
      if (hashed.status === "rejected") {
        outcomes[p.index] = failed(hashed.reason);
        return;
      }
      const input = chunk[p.index]!;
      // Checked again in the store's transaction: another write may have come between.
      if (!this.domainExists(input.domain)) {
        outcomes[p.index] = failed(notFound("DOMAIN_NOT_FOUND", `Domain ${input.domain}`, "domain"));
        return;
      }
      items.push({ input, mode, secretHash: hashed.value, digest: p.digest });
      written.push(p);
    });
    const results = await this.store.writeThings(items);
    results.forEach((result, n) => {
      const p = written[n]!;
      if ("error" in result) {
        outcomes[p.index] = { status: "failed", error: result.error };
        return;
      }
      const { change, thing } = result;
      if (change !== "unchanged") {
        this.view.setThing(thing);
        this.bus.emit("thing.changed", { thingName: thing.thingName, change });
      }
      outcomes[p.index] =
        p.secret === undefined ? { status: change, thing } : { status: change, thing, secret: p.secret };
    });
    return outcomes;
  }

  /** The domain and thing type exist (remembered in `known` for the rest of a bulk call). */
  private checkReferences(input: ThingWrite, known: KnownReferences): void {
    let domain = known.domains.get(input.domain);
    if (domain === undefined) {
      domain = this.domainExists(input.domain);
      known.domains.set(input.domain, domain);
    }
    if (!domain) throw notFound("DOMAIN_NOT_FOUND", `Domain ${input.domain}`, "domain");
    let type = known.types.get(input.thingType);
    if (type === undefined) {
      type = this.thingType(input.thingType) !== undefined;
      known.types.set(input.thingType, type);
    }
    if (!type) throw notFound("THING_TYPE_NOT_FOUND", `Thing type ${input.thingType}`, "thingType");
  }

  async deleteThing(thingName: string): Promise<void> {
    if (!this.thing(thingName)) throw notFound("THING_NOT_FOUND", `Thing ${thingName}`, "thingName");
    const groups = this.groupsOf(thingName);
    await this.store.deleteThing(thingName);
    this.view.removeThing(thingName);
    for (const groupId of groups) this.bus.emit("thingGroup.membership", { groupId, thingName, change: "removed" });
    this.bus.emit("thing.changed", { thingName, change: "deleted" });
    await this.bus.settled();
  }

  /**
   * Checks a device's credentials (MQTT); a thing without a secret cannot
   * connect. A generated secret answers at once; a chosen one may wait for a
   * KDF slot (`CredentialsBusyError` when too many wait).
   */
  async verifyThingSecret(thingName: string, secret: string): Promise<boolean> {
    const stored = await this.store.secretHash(thingName);
    if (!stored) return false;
    const verdict = await this.credentials.verify(thingName, secret, stored);
    // Only if nobody changed the secret meanwhile; no event: the secret is the same, only its hash moved.
    if (verdict.upgrade) await this.store.upgradeSecretHash(thingName, stored, verdict.upgrade);
    return verdict.ok;
  }

  /**
   * The hash to store for `secret`: the stored one when it already is this
   * secret's (a chosen secret's hash is salted, so it is checked, not
   * recomputed; an older scrypt one is replaced), else a new one.
   */
  private secretHashFor(
    thingName: string,
    secret: string,
    stored: string | null | undefined,
  ): string | Promise<string> {
    if (isGeneratedSecret(secret)) return this.credentials.keyedHash(thingName, secret);
    if (secret.length < MIN_CHOSEN_SECRET_LENGTH) {
      throw invalid("secret", `a chosen secret needs at least ${MIN_CHOSEN_SECRET_LENGTH} characters`);
    }
    if (!stored || stored.startsWith("hmac-")) return this.credentials.hash(thingName, secret);
    return Promise.resolve(this.credentials.verify(thingName, secret, stored)).then((v) =>
      v.ok ? (v.upgrade ?? stored) : this.credentials.hash(thingName, secret),
    );
  }

  // ---- thing groups ----

  /** A group by id, or else by name: the interface identifies groups by either. */
  group(idOrName: string): ThingGroup | undefined {
    return this.view.group(idOrName);
  }

  groups(): ThingGroup[] {
    return this.view.groups();
  }

  members(groupId: string): string[] {
    return this.view.members(groupId);
  }

  groupsOf(thingName: string): string[] {
    return this.view.groupsOf(thingName);
  }

  /**
   * Creates or changes a group; `things`, when given, becomes its exact
   * membership. Ids and names share one namespace, since the interface
   * names a group by either: an id may not be another group's name.
   */
  async putGroup(
    input: { id: string; name: string; domain: string; things?: string[] | undefined },
    mode: "create" | "update" | "upsert",
  ): Promise<ThingGroup> {
    if (!NAME_PATTERN.test(input.id)) throw invalid("id", "1-128 characters of 0-9, A-Z, a-z, '_', '.', ':' or '-'");
    if (!this.domainExists(input.domain)) throw notFound("DOMAIN_NOT_FOUND", `Domain ${input.domain}`, "domain");
    const group = this.group(input.id);
    const row = group?.id === input.id ? group : undefined;
    if (row && mode === "create") throw new ApiError("ALREADY_EXISTS", `Thing group ${input.id} already exists`, "id");
    if (!row && mode === "update") throw notFound("THING_GROUP_NOT_FOUND", `Thing group ${input.id}`, "id");
    const clash = await this.store.groupClash(input.id, input.name);
    if (clash) {
      const property = clash.name === input.id ? "id" : "name";
      const value = property === "name" ? input.name : input.id;
      throw new ApiError("ALREADY_EXISTS", `Thing group ${clash.id} already goes by ${value}`, property);
    }
    // Every thing must exist before anything is written, so a bad list leaves no half-made group.
    if (input.things) this.requireThings(input.things);
    if (!row || row.name !== input.name || row.domain !== input.domain) {
      this.view.setGroup(await this.store.putGroup({ id: input.id, name: input.name, domain: input.domain }));
      this.bus.emit("thingGroup.changed", { groupId: input.id });
    }
    if (input.things) await this.setMembers(input.id, input.things);
    return this.group(input.id)!;
  }

  async deleteGroup(idOrName: string): Promise<void> {
    const group = this.group(idOrName);
    if (!group) throw notFound("THING_GROUP_NOT_FOUND", `Thing group ${idOrName}`, "id");
    await this.store.deleteGroup(group.id);
    this.view.removeGroup(group.id);
    for (const thingName of group.things) {
      this.bus.emit("thingGroup.membership", { groupId: group.id, thingName, change: "removed" });
    }
    this.bus.emit("thingGroup.deleted", { groupId: group.id });
    await this.bus.settled();
  }

  /** Adds things to a group; things already in it are left alone. Returns the ones added. */
  async addMembers(groupId: string, thingNames: string[]): Promise<string[]> {
    this.requireThings(thingNames);
    const added = await this.store.addMembers(groupId, thingNames);
    for (const thingName of added) this.view.addMember(groupId, thingName);
    for (const thingName of added) this.bus.emit("thingGroup.membership", { groupId, thingName, change: "added" });
    await this.bus.settled();
    return added;
  }

  async removeMembers(groupId: string, thingNames: string[]): Promise<string[]> {
    const removed = await this.store.removeMembers(groupId, thingNames);
    for (const thingName of removed) this.view.removeMember(groupId, thingName);
    for (const thingName of removed) this.bus.emit("thingGroup.membership", { groupId, thingName, change: "removed" });
    await this.bus.settled();
    return removed;
  }

  private async setMembers(groupId: string, thingNames: string[]): Promise<void> {
    const current = new Set(this.members(groupId));
    const wanted = new Set(thingNames);
    await this.removeMembers(
      groupId,
      [...current].filter((t) => !wanted.has(t)),
    );
    await this.addMembers(
      groupId,
      [...wanted].filter((t) => !current.has(t)),
    );
  }

  private requireThings(thingNames: string[]): void {
    const missing = thingNames.find((t) => !this.thing(t));
    if (missing !== undefined) throw notFound("THING_NOT_FOUND", `Thing ${missing}`, "things");
  }
}

/** A pre-hashed secret (provisioning), stored as it is once its form is checked. */
function preHashed(input: ThingWrite, secretHash: string): string {
  if (input.secret !== undefined || input.generateSecret) {
    throw invalid("secretHash", "not with secret or generateSecret");
  }
  if (!isDeviceSecretHash(secretHash)) {
    throw invalid("secretHash", "pbkdf2-sha512$<iterations, at least 101>$<salt>$<hash> (npm run provision:hash)");
  }
  return secretHash;
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
