import { authorize, type Action, type Identity, type Principal, type User } from "../../auth/index.js";
import { notAuthorized, notFound } from "../../errors/index.js";
import type { ThingRegistry, ThingType } from "../../things/index.js";

/** Shared by the admin route modules: the checks every admin area makes the same way. */

export function requireDomain(identity: Identity, id: string, property = "domain"): void {
  if (!identity.domain(id)) throw notFound("DOMAIN_NOT_FOUND", `Domain ${id}`, property);
}

/** The domains a user lives in: its home and every domain it holds privileges on. */
/** The user named, or 404 `USER_NOT_FOUND` naming `userName`. */
export function existingUser(identity: Identity, userName: string): User {
  const user = identity.user(userName);
  if (!user) throw notFound("USER_NOT_FOUND", `User ${userName}`, "userName");
  return user;
}

export function domainsOf(user: Pick<User, "homeDomain" | "privileges">): string[] {
  return [...new Set([user.homeDomain, ...Object.keys(user.privileges)])];
}

/** Managing a user needs `Users.<action>` on every domain the user lives in. */
export function authorizeUser(principal: Principal, action: Action, domains: string[]): void {
  for (const d of domains) authorize(principal, `Users.${action}`, d);
}

/** No escalation: each grant that is new on a domain must be held there by the caller. */
export function authorizeGrants(
  principal: Principal,
  next: Record<string, string[]>,
  before: Record<string, string[]> = {},
): void {
  for (const [domain, grants] of Object.entries(next)) {
    const held = new Set(before[domain] ?? []);
    for (const grant of grants) {
      if (held.has(grant) || principal.mayGrant(grant, domain)) continue;
      throw notAuthorized(`User ${principal.userName} cannot grant ${grant} on domain ${domain}: it does not hold it`);
    }
  }
}

export function requireDomains(
  identity: Identity,
  homeDomain: string,
  privileges: Record<string, string[]>,
  homeProperty = "homeDomain",
): void {
  requireDomain(identity, homeDomain, homeProperty);
  for (const d of Object.keys(privileges)) requireDomain(identity, d, "privileges");
}

/** A thing type the caller cannot read is, to it, one that does not exist (THING_TYPE_NOT_FOUND). */
export function readableThingType(registry: ThingRegistry, principal: Principal, id: string): ThingType {
  const thingType = registry.thingType(id);
  if (!thingType || !principal.can("ThingTypes.READ", thingType.domain)) {
    throw notFound("THING_TYPE_NOT_FOUND", `Thing type ${id}`, "thingType");
  }
  return thingType;
}
