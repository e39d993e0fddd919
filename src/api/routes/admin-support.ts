import { authorize, type Identity, type Principal, type Resource } from "../../auth/index.js";
import { notFound } from "../../errors/index.js";

/** Shared by the admin route modules: the checks every admin area makes the same way. */

export function requireDomain(identity: Identity, id: string, property = "domain"): void {
  if (!identity.domain(id)) throw notFound("DOMAIN_NOT_FOUND", `Domain ${id}`, property);
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
