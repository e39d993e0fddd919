import { authorize, authorizeChange, requireReadWrite, type Identity, type Principal } from "../auth/index.js";
import { ApiError, invalid, notFound } from "../errors/index.js";
import type { ThingRegistry } from "./registry.js";
import type { ResourceDefinition, Thing, ThingOutcome, ThingType, ThingWrite } from "./types.js";

export interface ThingsDeps {
  registry: ThingRegistry;
  identity: Pick<Identity, "domain">;
}

/** A thing type as CREATE takes it; `label` defaults to the id. */
export interface NewThingType {
  id: string;
  label?: string | undefined;
  domain: string;
  resources: ResourceDefinition[];
}

/** What an update of a thing type may change; resources are replaced as a whole. */
export interface ThingTypeChange {
  label?: string | undefined;
  domain?: string | undefined;
  resources?: ResourceDefinition[] | undefined;
}

/** What an update of a thing may change (PATCH semantics: the rest stays). */
export type ThingChange = Partial<Omit<ThingWrite, "thingName">>;

/** A thing written: as it now is, with the secret dms generated for it (shown this once). */
export type WrittenThing = ThingOutcome & { status: "created" | "updated" | "unchanged" };

/**
 * The thing-type operations with their access rules: a type is seen with `ThingTypes.READ` on its
 * domain; moving one needs DELETE where it was and CREATE where it goes. Changes need a ReadWrite role.
 */
export class ThingTypesService {
  private readonly registry: ThingRegistry;
  private readonly identity: ThingsDeps["identity"];

  constructor(deps: ThingsDeps) {
    this.registry = deps.registry;
    this.identity = deps.identity;
  }

  /** The types the caller may read, of one domain when `domain` is given. */
  list(p: Principal, domain?: string): ThingType[] {
    return this.registry
      .thingTypes()
      .filter((t) => (domain === undefined || t.domain === domain) && p.can("ThingTypes.READ", t.domain));
  }

  /** The admin API's read: an unknown type is THING_TYPE_NOT_FOUND, an unreadable one NOT_AUTHORIZED. */
  get(p: Principal, id: string): ThingType {
    const thingType = this.existing(id);
    authorize(p, "ThingTypes.READ", thingType.domain);
    return thingType;
  }

  /** MIC's read: a type the caller cannot read is, to it, one that does not exist. */
  readable(p: Principal, id: string): ThingType {
    return readableThingType(this.registry, p, id);
  }

  create(p: Principal, body: NewThingType): Promise<ThingType> {
    requireReadWrite(p);
    requireDomain(this.identity, body.domain);
    authorize(p, "ThingTypes.CREATE", body.domain);
    return this.registry.putThingType({ ...body, label: body.label ?? body.id }, "create");
  }

  update(p: Principal, id: string, change: ThingTypeChange): Promise<ThingType> {
    const current = this.existing(id);
    requireReadWrite(p);
    const domain = change.domain ?? current.domain;
    requireDomain(this.identity, domain);
    authorizeChange(p, "ThingTypes", current.domain, domain);
    const next = {
      id: current.id,
      label: change.label ?? current.label,
      domain,
      resources: change.resources ?? current.resources,
    };
    return this.registry.putThingType(next, "update");
  }

  async delete(p: Principal, id: string): Promise<void> {
    const thingType = this.existing(id);
    requireReadWrite(p);
    authorize(p, "ThingTypes.DELETE", thingType.domain);
    await this.registry.deleteThingType(thingType.id);
  }

  private existing(id: string): ThingType {
    const thingType = this.registry.thingType(id);
    if (!thingType) throw notFound("THING_TYPE_NOT_FOUND", `Thing type ${id}`, "id");
    return thingType;
  }
}

/**
 * The thing operations with their access rules: a thing is seen with `Things.READ` on its domain;
 * creating one needs `Things.CREATE` there and a readable thing type; moving one needs DELETE
 * where it was and CREATE where it goes. Changes need a ReadWrite role. Bulk writes check each
 * thing on its own: one refused does not stop the others.
 */
export class ThingsService {
  private readonly registry: ThingRegistry;
  private readonly identity: ThingsDeps["identity"];

  constructor(deps: ThingsDeps) {
    this.registry = deps.registry;
    this.identity = deps.identity;
  }

  /** The things the caller may read; both filters optional. */
  list(p: Principal, filter: { thingType?: string | undefined; domain?: string | undefined } = {}): Thing[] {
    return this.registry.things(filter).filter((t) => p.can("Things.READ", t.domain));
  }

  get(p: Principal, thingName: string): Thing {
    const thing = this.existing(thingName);
    authorize(p, "Things.READ", thing.domain);
    return thing;
  }

  async create(p: Principal, body: ThingWrite): Promise<WrittenThing> {
    requireReadWrite(p);
    requireDomain(this.identity, body.domain);
    this.authorizeCreate(p, body);
    const [outcome] = await this.registry.putThings([body], { mode: "create" });
    if (outcome!.status === "failed") throw outcome!.error;
    return outcome!;
  }

  async update(p: Principal, thingName: string, change: ThingChange): Promise<WrittenThing> {
    const current = this.existing(thingName);
    requireReadWrite(p);
    const next = this.authorizeUpdate(p, current, change);
    const [outcome] = await this.registry.putThings([next], { mode: "update" });
    if (outcome!.status === "failed") throw outcome!.error;
    return outcome!;
  }

  /** Outcomes at their items' indexes. */
  bulkCreate(p: Principal, things: readonly ThingWrite[]): Promise<ThingOutcome[]> {
    requireReadWrite(p);
    return this.registry.putThings(things, { mode: "create", authorize: (body) => this.authorizeCreate(p, body) });
  }

  /** Each item is completed from its thing as it is (PATCH semantics); one that cannot be is refused alone. */
  async bulkUpdate(p: Principal, things: readonly (ThingChange & { thingName: string })[]): Promise<ThingOutcome[]> {
    requireReadWrite(p);
    const refused = new Map<number, ApiError>();
    const writes: ThingWrite[] = [];
    const slots = new Map<number, number>();
    things.forEach(({ thingName, ...change }, index) => {
      try {
        const write = this.authorizeUpdate(p, this.existing(thingName), change);
        slots.set(index, writes.push(write) - 1);
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        refused.set(index, err);
      }
    });
    const applied = await this.registry.putThings(writes, { mode: "update" });
    return things.map((_, index) => {
      const error = refused.get(index);
      return error ? { status: "failed", error } : applied[slots.get(index)!]!;
    });
  }

  async delete(p: Principal, thingName: string): Promise<void> {
    const thing = this.existing(thingName);
    requireReadWrite(p);
    authorize(p, "Things.DELETE", thing.domain);
    await this.registry.deleteThing(thing.thingName);
  }

  private existing(thingName: string): Thing {
    const thing = this.registry.thing(thingName);
    if (!thing) throw notFound("THING_NOT_FOUND", `Thing ${thingName}`, "thingName");
    return thing;
  }

  /** The checks of one thing's creation. */
  private authorizeCreate(p: Principal, body: ThingWrite): void {
    checkSecretChoice(body);
    requireDomain(this.identity, body.domain);
    authorize(p, "Things.CREATE", body.domain);
    readableThingType(this.registry, p, body.thingType);
  }

  /** The checks of one thing's change; answers the whole write. */
  private authorizeUpdate(p: Principal, current: Thing, change: ThingChange): ThingWrite {
    checkSecretChoice(change);
    const domain = change.domain ?? current.domain;
    requireDomain(this.identity, domain);
    authorizeChange(p, "Things", current.domain, domain);
    if (change.thingType !== undefined) readableThingType(this.registry, p, change.thingType);
    return { ...change, thingName: current.thingName, thingType: change.thingType ?? current.thingType, domain };
  }
}

/** `secret` and `generateSecret` are two ways to set one thing. */
function checkSecretChoice(body: { secret?: string | undefined; generateSecret?: boolean | undefined }): void {
  if (body.generateSecret && body.secret !== undefined) {
    throw invalid("generateSecret", "give either secret or generateSecret: true, not both");
  }
}

function requireDomain(identity: ThingsDeps["identity"], id: string): void {
  if (!identity.domain(id)) throw notFound("DOMAIN_NOT_FOUND", `Domain ${id}`, "domain");
}

/** A thing type the caller cannot read is, to it, one that does not exist (THING_TYPE_NOT_FOUND). */
function readableThingType(registry: ThingRegistry, p: Principal, id: string): ThingType {
  const thingType = registry.thingType(id);
  if (!thingType || !p.can("ThingTypes.READ", thingType.domain)) {
    throw notFound("THING_TYPE_NOT_FOUND", `Thing type ${id}`, "thingType");
  }
  return thingType;
}
