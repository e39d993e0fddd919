import { ApiError } from "../errors/index.js";

export const ACTIONS = ["CREATE", "READ", "UPDATE", "DELETE"] as const;
export type Action = (typeof ACTIONS)[number];

/** The resources privileges are held on (`<Resource>.<ACTION>`). */
export const RESOURCES = [
  "Domains",
  "Users",
  "ApiKeys",
  "ThingTypes",
  "Things",
  "ThingGroups",
  "ThingJobs",
  "Rules",
  "Observations",
  "DataExport",
  "Files",
  "Events",
] as const;
export type Resource = (typeof RESOURCES)[number];
export type Privilege = `${Resource}.${Action}`;

export const ROLES = ["Read", "ReadWrite"] as const;
export type RoleName = (typeof ROLES)[number];

/** A granted privilege may also be `<Resource>.*` (all four actions) or `*.*` (everything). */
// eslint-disable-next-line no-restricted-syntax -- built from the constant resource and action lists
const GRANT = new RegExp(`^(${RESOURCES.join("|")}|\\*)\\.(${ACTIONS.join("|")}|\\*)$`);

export function isGrant(value: string): boolean {
  return GRANT.test(value);
}

/** Every privilege a grant stands for: `Rules.*` is the four Rules actions, `*.*` every privilege. */
export function expandGrant(grant: string): Privilege[] {
  if (!isGrant(grant)) return [];
  const [resource, action] = grant.split(".") as [string, string];
  const resources = resource === "*" ? RESOURCES : [resource as Resource];
  const actions = action === "*" ? ACTIONS : [action as Action];
  return resources.flatMap((r) => actions.map((a): Privilege => `${r}.${a}`));
}

/** Where a domain sits in the tree; `path` is `root/<sub>/<subsub>`. */
export interface DomainPaths {
  pathOf(domainId: string): string | undefined;
}

/**
 * The caller of an operation: a user with a role and its grants per domain.
 * A grant held on a domain holds on every domain below it.
 */
export class Principal {
  constructor(
    readonly userName: string,
    readonly role: RoleName,
    readonly homeDomain: string,
    readonly grants: ReadonlyMap<string, ReadonlySet<string>>,
    private readonly domains: DomainPaths,
  ) {}

  /** The grant exactly as held on `domainId`, without inheritance (for `readonly` of rules). */
  holdsExplicitly(privilege: Privilege, domainId: string): boolean {
    return matches(this.grants.get(domainId), privilege);
  }

  can(privilege: Privilege, domainId: string): boolean {
    if (this.role === "Read" && !privilege.endsWith(".READ")) return false;
    const path = this.domains.pathOf(domainId);
    if (path === undefined) return false;
    // A grant on the domain itself or on any ancestor up to root holds here.
    return path.split("/").some((ancestor) => matches(this.grants.get(ancestor), privilege));
  }

  /** May this principal hand `grant` on `domainId` to someone? Only if it holds all of it there itself. */
  mayGrant(grant: string, domainId: string): boolean {
    const privileges = expandGrant(grant);
    return privileges.length > 0 && privileges.every((p) => this.can(p, domainId));
  }

  /** Domains (ids) where `privilege` holds: the granted ones and all below them. */
  domainsWith(privilege: Privilege, all: Iterable<{ id: string; path: string }>): Set<string> {
    const out = new Set<string>();
    for (const d of all) if (this.can(privilege, d.id)) out.add(d.id);
    return out;
  }
}

function matches(granted: ReadonlySet<string> | undefined, privilege: Privilege): boolean {
  if (!granted) return false;
  if (granted.has(privilege) || granted.has("*.*")) return true;
  const dot = privilege.indexOf(".");
  return granted.has(`${privilege.slice(0, dot)}.*`) || granted.has(`*.${privilege.slice(dot + 1)}`);
}

/** The one authorization check every route uses: throws NOT_AUTHORIZED when `privilege` does not hold. */
export function authorize(principal: Principal, privilege: Privilege, domainId: string): void {
  if (!principal.can(privilege, domainId)) {
    throw new ApiError("NOT_AUTHORIZED", `User ${principal.userName} lacks ${privilege} on domain ${domainId}`);
  }
}

/** Refuses a Read user an operation that writes, whatever its privileges. */
export function requireReadWrite(principal: Principal): void {
  if (principal.role !== "ReadWrite") {
    throw new ApiError("NOT_AUTHORIZED", `User ${principal.userName} has role ${principal.role}: read-only`);
  }
}

/**
 * An update that keeps the domain needs `<Resource>.UPDATE` there; one that
 * moves the object needs DELETE on the old domain and CREATE on the new one,
 * as rules do in the interface.
 */
export function authorizeChange(principal: Principal, resource: Resource, from: string, to: string): void {
  if (from === to) {
    authorize(principal, `${resource}.UPDATE`, from);
    return;
  }
  authorize(principal, `${resource}.DELETE`, from);
  authorize(principal, `${resource}.CREATE`, to);
}
