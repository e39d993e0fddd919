import type { EventBus } from "../bus/index.js";
import type { ThingLookups, ThingStore } from "./store.js";
import type { Thing, ThingGroup, ThingType } from "./types.js";

/** Byte order, as SQLite's BINARY collation and PostgreSQL's `COLLATE "C"` sort. */
const byteOrder = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Every thing type, thing and group in memory: the synchronous lookups the engine, the MQTT
 * bridge, the proxy and every access check make per message or per request, answered without a
 * round trip to the store, whichever database it is on. Loaded once at start; this process's
 * writes are applied by the registry as they are stored, other processes' are read again from
 * the store when the bus relays their change.
 */
export class ThingView implements ThingLookups {
  private readonly types = new Map<string, ThingType>();
  private readonly byName = new Map<string, Thing>();
  private readonly bySerial = new Map<string, string>();
  private readonly groupsById = new Map<string, ThingGroup>();
  private readonly groupIdByName = new Map<string, string>();
  private readonly groupsOfThing = new Map<string, Set<string>>();
  /** Bumped by every change of a key, so that a read started before it does not undo it. */
  private readonly generations = new Map<string, number>();
  private readonly unfollow: (() => void)[] = [];
  /** Changes relayed while the store is read: applied once it has been. */
  private pending: (() => void)[] | undefined = [];

  private constructor(private readonly store: ThingStore) {}

  /** Follows other processes' changes, then reads the store: a change relayed while it reads is read again after. */
  static async open(store: ThingStore, bus: EventBus): Promise<ThingView> {
    const view = new ThingView(store);
    view.follow(bus);
    try {
      const { thingTypes, things, groups } = await store.loadAll();
      for (const t of thingTypes) view.types.set(t.id, t);
      for (const t of things) view.setThing(t);
      for (const g of groups) view.setGroup(g);
    } catch (err) {
      view.close();
      throw err;
    }
    const pending = view.pending!;
    view.pending = undefined;
    for (const apply of pending) apply();
    return view;
  }

  close(): void {
    for (const off of this.unfollow.splice(0)) off();
  }

  // ---- lookups ----

  thingType(id: string): ThingType | undefined {
    return this.types.get(id);
  }

  thingTypes(): ThingType[] {
    return [...this.types.values()].sort((a, b) => byteOrder(a.id, b.id));
  }

  thing(thingName: string): Thing | undefined {
    return this.byName.get(thingName);
  }

  thingBySerial(serial: string): Thing | undefined {
    const name = this.bySerial.get(serial);
    return name === undefined ? undefined : this.byName.get(name);
  }

  things(filter: { thingType?: string | undefined; domain?: string | undefined }): Thing[] {
    const { thingType, domain } = filter;
    const matching: Thing[] = [];
    for (const t of this.byName.values()) {
      if ((thingType === undefined || t.thingType === thingType) && (domain === undefined || t.domain === domain)) {
        matching.push(t);
      }
    }
    return matching.sort((a, b) => byteOrder(a.thingName, b.thingName));
  }

  group(idOrName: string): ThingGroup | undefined {
    const group = this.groupsById.get(idOrName) ?? this.groupsById.get(this.groupIdByName.get(idOrName) ?? "");
    return group && { ...group, things: this.members(group.id) };
  }

  groups(): ThingGroup[] {
    return [...this.groupsById.keys()].sort(byteOrder).map((id) => this.group(id)!);
  }

  members(groupId: string): string[] {
    return [...(this.groupsById.get(groupId)?.things ?? [])].sort(byteOrder);
  }

  groupsOf(thingName: string): string[] {
    return [...(this.groupsOfThing.get(thingName) ?? [])];
  }

  // ---- this process's writes, applied as they are stored ----

  setThingType(type: ThingType): void {
    this.touch(`type:${type.id}`);
    this.types.set(type.id, type);
  }

  removeThingType(id: string): void {
    this.touch(`type:${id}`);
    this.types.delete(id);
  }

  setThing(thing: Thing): void {
    this.touch(`thing:${thing.thingName}`);
    const before = this.byName.get(thing.thingName);
    if (before?.serial != null) this.bySerial.delete(before.serial);
    this.byName.set(thing.thingName, thing);
    if (thing.serial !== null) this.bySerial.set(thing.serial, thing.thingName);
  }

  /** The thing and its memberships. */
  removeThing(thingName: string): void {
    this.touch(`thing:${thingName}`);
    const before = this.byName.get(thingName);
    if (before?.serial != null) this.bySerial.delete(before.serial);
    this.byName.delete(thingName);
    for (const groupId of this.groupsOf(thingName)) this.removeMember(groupId, thingName);
  }

  /** The group with its members as given. */
  setGroup(group: ThingGroup): void {
    this.touch(`group:${group.id}`);
    const before = this.groupsById.get(group.id);
    if (before) this.groupIdByName.delete(before.name);
    for (const thingName of before?.things ?? []) this.groupsOfThing.get(thingName)?.delete(group.id);
    this.groupsById.set(group.id, { ...group, things: [] });
    this.groupIdByName.set(group.name, group.id);
    for (const thingName of group.things) this.addMember(group.id, thingName);
  }

  removeGroup(groupId: string): void {
    this.touch(`group:${groupId}`);
    const group = this.groupsById.get(groupId);
    if (!group) return;
    for (const thingName of group.things) this.groupsOfThing.get(thingName)?.delete(groupId);
    this.groupIdByName.delete(group.name);
    this.groupsById.delete(groupId);
  }

  addMember(groupId: string, thingName: string): void {
    const group = this.groupsById.get(groupId);
    if (!group || group.things.includes(thingName)) return;
    group.things.push(thingName);
    let of = this.groupsOfThing.get(thingName);
    if (!of) this.groupsOfThing.set(thingName, (of = new Set()));
    of.add(groupId);
  }

  removeMember(groupId: string, thingName: string): void {
    const group = this.groupsById.get(groupId);
    if (group) group.things = group.things.filter((t) => t !== thingName);
    this.groupsOfThing.get(thingName)?.delete(groupId);
  }

  // ---- other processes' changes ----

  private follow(bus: EventBus): void {
    this.unfollow.push(
      bus.follow("thingType.changed", ({ id, change }, remote) => {
        if (!remote) return;
        if (change === "deleted") this.relayed(() => this.removeThingType(id));
        else
          this.reread(
            `type:${id}`,
            () => this.store.readThingType(id),
            (t) => this.applyType(id, t),
          );
      }),
      bus.follow("thing.changed", ({ thingName, change }, remote) => {
        if (!remote) return;
        if (change === "deleted") this.relayed(() => this.removeThing(thingName));
        else {
          this.reread(
            `thing:${thingName}`,
            async () => (await this.store.storedThings([thingName])).get(thingName)?.thing,
            (t) => (t ? this.setThing(t) : this.removeThing(thingName)),
          );
        }
      }),
      bus.follow("thingGroup.changed", ({ groupId }, remote) => {
        if (!remote) return;
        this.reread(
          `group:${groupId}`,
          () => this.store.readGroup(groupId),
          (g) => (g ? this.setGroup(g) : this.removeGroup(groupId)),
        );
      }),
      bus.follow("thingGroup.deleted", ({ groupId }, remote) => {
        if (remote) this.relayed(() => this.removeGroup(groupId));
      }),
      bus.follow("thingGroup.membership", ({ groupId, thingName, change }, remote) => {
        if (!remote) return;
        this.relayed(() =>
          change === "added" ? this.addMember(groupId, thingName) : this.removeMember(groupId, thingName),
        );
      }),
    );
  }

  private applyType(id: string, type: ThingType | undefined): void {
    if (type) this.setThingType(type);
    else this.removeThingType(id);
  }

  /** Applies a relayed change now, or once the store has been read at open. */
  private relayed(apply: () => void): void {
    if (this.pending) this.pending.push(apply);
    else apply();
  }

  /** Reads `key` again from the store and applies it, unless a change of it came meanwhile. */
  private reread<T>(key: string, read: () => Promise<T>, apply: (value: T) => void): void {
    this.relayed(() => {
      const generation = this.generations.get(key) ?? 0;
      read().then(
        (value) => {
          if ((this.generations.get(key) ?? 0) === generation) apply(value);
        },
        // The next change of the key, or the next start, reads it again.
        () => undefined,
      );
    });
  }

  private touch(key: string): void {
    this.generations.set(key, (this.generations.get(key) ?? 0) + 1);
  }
}
