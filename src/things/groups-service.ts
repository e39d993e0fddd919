import { authorize, authorizeChange, requireReadWrite, type Identity, type Principal } from "../auth/index.js";
import { notFound } from "../errors/index.js";
import type { ThingRegistry } from "./registry.js";
import type { ThingGroup } from "./types.js";

export interface ThingGroupsDeps {
  registry: ThingRegistry;
  identity: Pick<Identity, "domain">;
}

/** CREATE's body; `name` defaults to the id. */
export interface NewThingGroup {
  id: string;
  name?: string | undefined;
  domain: string;
  things: string[];
}

/**
 * The thing-group operations with their access rules: a group is seen with `ThingGroups.READ`
 * on its domain, and within it only the members the caller may read (`Things.READ`); a member
 * the caller cannot read is, to it, not there. Changes need a ReadWrite role.
 */
export class ThingGroupsService {
  private readonly registry: ThingRegistry;
  private readonly identity: ThingGroupsDeps["identity"];

  constructor(deps: ThingGroupsDeps) {
    this.registry = deps.registry;
    this.identity = deps.identity;
  }

  list(p: Principal): ThingGroup[] {
    return this.registry
      .groups()
      .filter((g) => p.can("ThingGroups.READ", g.domain))
      .map((g) => this.view(p, g));
  }

  get(p: Principal, idOrName: string): ThingGroup {
    const group = this.existing(idOrName);
    authorize(p, "ThingGroups.READ", group.domain);
    return this.view(p, group);
  }

  async create(p: Principal, body: NewThingGroup): Promise<ThingGroup> {
    requireReadWrite(p);
    this.requireDomain(body.domain);
    authorize(p, "ThingGroups.CREATE", body.domain);
    this.requireReadableThings(p, body.things);
    const group = await this.registry.putGroup({ ...body, name: body.name ?? body.id }, "create");
    return this.view(p, group);
  }

  /** Renames, or moves to another domain (DELETE on the old one, CREATE on the new one). */
  async update(
    p: Principal,
    idOrName: string,
    change: { name?: string | undefined; domain?: string | undefined },
  ): Promise<ThingGroup> {
    const current = this.existing(idOrName);
    requireReadWrite(p);
    const domain = change.domain ?? current.domain;
    this.requireDomain(domain);
    authorizeChange(p, "ThingGroups", current.domain, domain);
    const group = await this.registry.putGroup({ id: current.id, name: change.name ?? current.name, domain }, "update");
    return this.view(p, group);
  }

  async delete(p: Principal, idOrName: string): Promise<void> {
    const group = this.existing(idOrName);
    requireReadWrite(p);
    authorize(p, "ThingGroups.DELETE", group.domain);
    await this.registry.deleteGroup(group.id);
  }

  async addThings(p: Principal, idOrName: string, things: string[]): Promise<ThingGroup> {
    const group = this.existing(idOrName);
    requireReadWrite(p);
    authorize(p, "ThingGroups.UPDATE", group.domain);
    this.requireReadableThings(p, things);
    await this.registry.addMembers(group.id, things);
    return this.view(p, this.existing(group.id));
  }

  async removeThing(p: Principal, idOrName: string, thingName: string): Promise<ThingGroup> {
    const group = this.existing(idOrName);
    requireReadWrite(p);
    authorize(p, "ThingGroups.UPDATE", group.domain);
    if (!this.view(p, group).things.includes(thingName)) {
      throw notFound("THING_NOT_FOUND", `Thing ${thingName} in group ${group.id}`, "thingName");
    }
    await this.registry.removeMembers(group.id, [thingName]);
    return this.view(p, this.existing(group.id));
  }

  private existing(idOrName: string): ThingGroup {
    const group = this.registry.group(idOrName);
    if (!group) throw notFound("THING_GROUP_NOT_FOUND", `Thing group ${idOrName}`, "id");
    return group;
  }

  /** The group as the caller may see it: members it cannot read are left out. */
  private view(p: Principal, group: ThingGroup): ThingGroup {
    return {
      ...group,
      things: group.things.filter((t) => {
        const thing = this.registry.thing(t);
        return thing !== undefined && p.can("Things.READ", thing.domain);
      }),
    };
  }

  private requireDomain(id: string): void {
    if (!this.identity.domain(id)) throw notFound("DOMAIN_NOT_FOUND", `Domain ${id}`, "domain");
  }

  /** A thing the caller cannot read is, to it, one that does not exist. */
  private requireReadableThings(p: Principal, thingNames: string[]): void {
    for (const thingName of thingNames) {
      const thing = this.registry.thing(thingName);
      if (!thing || !p.can("Things.READ", thing.domain)) {
        throw notFound("THING_NOT_FOUND", `Thing ${thingName}`, "things");
      }
    }
  }
}
