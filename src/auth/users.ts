import { randomSecret } from "../config/index.js";
import { notAuthorized, notFound } from "../errors/index.js";
import type { Identity, NewUser, UserChange } from "./identity.js";
import {
  ACTIONS,
  RESOURCES,
  authorize,
  requireReadWrite,
  type Action,
  type Principal,
  type RoleName,
} from "./privileges.js";
import type { User } from "./store.js";

/** A MIC user creation: without privileges the user inherits the caller's (see `createForMic`). */
export type NewMicUser = Omit<NewUser, "password"> & { password?: string | undefined };

/**
 * The user operations of the admin API and of MIC's User API, with their access rules: managing
 * a user needs `Users.<action>` on every domain it lives in (its home and those it holds
 * privileges on), and nobody grants what it does not hold itself. Changes need a ReadWrite role.
 */
export class UsersService {
  constructor(private readonly identity: Identity) {}

  /** The users the caller may read on every domain they live in. */
  async list(p: Principal): Promise<User[]> {
    return this.identity.users().filter((u) => domainsOf(u).every((d) => p.can("Users.READ", d)));
  }

  get(p: Principal, userName: string): User {
    const user = this.existing(userName);
    authorizeUser(p, "READ", domainsOf(user));
    return user;
  }

  /** MIC's GET /users/{userName} and GET /user: a user reads itself without any privilege. */
  getForMic(p: Principal, userName: string): User {
    const user = this.existing(userName);
    if (user.userName !== p.userName) authorizeUser(p, "READ", domainsOf(user));
    return user;
  }

  /** `homeProperty` names the home domain in a DOMAIN_NOT_FOUND (MIC calls it `domainName`). */
  async create(p: Principal, input: NewUser, homeProperty = "homeDomain"): Promise<User> {
    requireReadWrite(p);
    const privileges = input.privileges ?? {};
    this.requireDomains(input.homeDomain, privileges, homeProperty);
    authorizeUser(p, "CREATE", domainsOf({ homeDomain: input.homeDomain, privileges }));
    authorizeGrants(p, privileges);
    return this.identity.createUser({ ...input, privileges });
  }

  /**
   * MIC's POST /users: without privileges the user holds on its domain every privilege the caller
   * holds there (so nothing is escalated), reading ones only for a Read user, as MIC derived
   * permissions from the role; without a password it has an unguessable one nobody knows.
   */
  createForMic(p: Principal, input: NewMicUser): Promise<User> {
    requireReadWrite(p);
    const privileges = input.privileges ?? { [input.homeDomain]: inheritedGrants(p, input.role, input.homeDomain) };
    return this.create(p, { ...input, password: input.password ?? randomSecret(), privileges }, "domainName");
  }

  async update(p: Principal, userName: string, change: UserChange): Promise<User> {
    const user = this.existing(userName);
    requireReadWrite(p);
    const next = { homeDomain: change.homeDomain ?? user.homeDomain, privileges: change.privileges ?? user.privileges };
    this.requireDomains(next.homeDomain, next.privileges);
    authorizeUser(p, "UPDATE", [...new Set([...domainsOf(user), ...domainsOf(next)])]);
    // Raising Read to ReadWrite turns every grant into a writing one: all of them count as new.
    const raised = change.role === "ReadWrite" && user.role === "Read";
    authorizeGrants(p, next.privileges, raised ? {} : user.privileges);
    return this.identity.updateUser(user.userName, change);
  }

  async delete(p: Principal, userName: string): Promise<void> {
    const user = this.existing(userName);
    requireReadWrite(p);
    authorizeUser(p, "DELETE", domainsOf(user));
    await this.identity.deleteUser(user.userName);
  }

  /** The user named, or 404 `USER_NOT_FOUND` naming `userName`. */
  private existing(userName: string): User {
    const user = this.identity.user(userName);
    if (!user) throw notFound("USER_NOT_FOUND", `User ${userName}`, "userName");
    return user;
  }

  private requireDomains(homeDomain: string, privileges: Record<string, string[]>, homeProperty = "homeDomain"): void {
    this.requireDomain(homeDomain, homeProperty);
    for (const d of Object.keys(privileges)) this.requireDomain(d, "privileges");
  }

  private requireDomain(id: string, property: string): void {
    if (!this.identity.domain(id)) throw notFound("DOMAIN_NOT_FOUND", `Domain ${id}`, property);
  }
}

/** The domains a user lives in: its home and every domain it holds privileges on. */
function domainsOf(user: Pick<User, "homeDomain" | "privileges">): string[] {
  return [...new Set([user.homeDomain, ...Object.keys(user.privileges)])];
}

/** Managing a user needs `Users.<action>` on every domain the user lives in. */
function authorizeUser(p: Principal, action: Action, domains: string[]): void {
  for (const d of domains) authorize(p, `Users.${action}`, d);
}

/** No escalation: each grant that is new on a domain must be held there by the caller. */
function authorizeGrants(p: Principal, next: Record<string, string[]>, before: Record<string, string[]> = {}): void {
  for (const [domain, grants] of Object.entries(next)) {
    const held = new Set(before[domain] ?? []);
    for (const grant of grants) {
      if (held.has(grant) || p.mayGrant(grant, domain)) continue;
      throw notAuthorized(`User ${p.userName} cannot grant ${grant} on domain ${domain}: it does not hold it`);
    }
  }
}

function inheritedGrants(p: Principal, role: RoleName, domain: string): string[] {
  const actions = role === "Read" ? (["READ"] as const) : ACTIONS;
  return RESOURCES.flatMap((r) => actions.map((a) => `${r}.${a}` as const)).filter((privilege) =>
    p.can(privilege, domain),
  );
}
