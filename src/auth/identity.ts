import { randomUUID } from "node:crypto";
import type { EventBus } from "../bus/index.js";
import { ApiError, invalid, notFound } from "../errors/index.js";
import { hashApiKey, hashSecret, verifySecret } from "./passwords.js";
import { Principal, isGrant, type DomainPaths, type RoleName } from "./privileges.js";
import { ROOT_DOMAIN, type ApiKeyInfo, type Domain, type IdentityStore, type User } from "./store.js";

export interface NewUser {
  userName: string;
  password: string;
  role: RoleName;
  homeDomain: string;
  email?: string | undefined;
  privileges?: Record<string, string[]> | undefined;
}

/** What PATCH may change; `email: null` removes the address. */
export type UserChange = Partial<Omit<NewUser, "userName" | "email">> & { email?: string | null | undefined };

/** Privileges as `toUser` reads them back: domains and grants sorted, duplicates and empty lists gone. */
function normalizePrivileges(privileges: Record<string, string[]>): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const domain of Object.keys(privileges).sort()) {
    const list = [...new Set(privileges[domain])].sort();
    if (list.length > 0) out[domain] = list;
  }
  return out;
}
const ID_PATTERN = /^[0-9A-Za-z_-]{1,64}$/;

/**
 * Domains, users and API keys, kept in an `IdentityStore` and held in memory: every request's
 * principal, every authorization's domain tree and every API key check are answered without a
 * round trip. This process's writes reload what they changed once stored; other processes'
 * changes arrive through the bus (`domain.changed`, `user.changed`, `apiKey.changed`).
 */
export class Identity implements DomainPaths {
  private tree = new Map<string, Domain>();
  private apiKeyHashes = new Set<string>();
  private readonly byName = new Map<string, User>();
  /** Counts the reloads started of each part, so that a slower, older read does not undo a newer one. */
  private readonly started = new Map<string, number>();
  private readonly unfollow: (() => void)[] = [];

  private constructor(
    private readonly store: IdentityStore,
    private readonly bus: EventBus,
  ) {}

  /**
   * Follows other processes' changes, then loads everything. Subscribed before anything else that
   * follows domains (the search index reads the tree), so the tree is current when they run.
   */
  static async open(store: IdentityStore, bus: EventBus): Promise<Identity> {
    const identity = new Identity(store, bus);
    const remote = (reload: () => Promise<void>) => (_: unknown, fromElsewhere: boolean) => {
      if (fromElsewhere) reload().catch(() => undefined);
    };
    identity.unfollow.push(
      bus.follow(
        "domain.changed",
        remote(async () => {
          await identity.reloadDomains();
          // A deleted domain takes its privileges with it.
          await identity.reloadUsers();
        }),
      ),
      bus.follow(
        "apiKey.changed",
        remote(() => identity.reloadApiKeys()),
      ),
      bus.follow("user.changed", (event, fromElsewhere) => {
        if (fromElsewhere) identity.reloadUser(event.userName).catch(() => undefined);
      }),
    );
    await identity.refresh();
    return identity;
  }

  /**
   * Reads domains, users and API keys again from the store: what other processes changed is then
   * known here even before the bus relays it (a process that waited for another's provisioning).
   */
  async refresh(): Promise<void> {
    await Promise.all([this.reloadDomains(), this.reloadUsers(), this.reloadApiKeys()]);
  }

  close(): void {
    for (const off of this.unfollow.splice(0)) off();
  }

  /** Runs `read` and applies its result unless a reload of the same `part` started after it did. */
  private async latest<T>(part: string, read: () => Promise<T>, apply: (value: T) => void): Promise<void> {
    const mine = (this.started.get(part) ?? 0) + 1;
    this.started.set(part, mine);
    const value = await read();
    if (this.started.get(part) === mine) apply(value);
  }

  // ---- domains ----

  pathOf(domainId: string): string | undefined {
    return this.tree.get(domainId)?.path;
  }

  domain(id: string): Domain | undefined {
    return this.tree.get(id);
  }

  domains(): Domain[] {
    return [...this.tree.values()].sort((a, b) => a.path.localeCompare(b.path));
  }

  /** `ancestor` is `domain` itself or above it in the tree. */
  isAncestorOrSelf(ancestor: string, domain: string): boolean {
    const a = this.pathOf(ancestor);
    const d = this.pathOf(domain);
    return a !== undefined && d !== undefined && (d === a || d.startsWith(`${a}/`));
  }

  async createDomain(id: string, parent: string, label?: string): Promise<Domain> {
    if (!ID_PATTERN.test(id)) throw invalid("id", "1-64 characters of 0-9, A-Z, a-z, '_' or '-'");
    const parentDomain = this.tree.get(parent);
    if (!parentDomain) throw notFound("DOMAIN_NOT_FOUND", `Domain ${parent}`, "parent");
    if (this.tree.has(id)) throw new ApiError("ALREADY_EXISTS", `Domain ${id} already exists`, "id");
    await this.store.insertDomain({ id, parent, label: label ?? id, path: `${parentDomain.path}/${id}` });
    await this.reloadDomains();
    this.bus.emit("domain.changed", { id, change: "created" });
    return this.tree.get(id)!;
  }

  async updateDomain(id: string, label: string): Promise<Domain> {
    if (!this.tree.has(id)) throw notFound("DOMAIN_NOT_FOUND", `Domain ${id}`, "id");
    await this.store.updateDomainLabel(id, label);
    await this.reloadDomains();
    this.bus.emit("domain.changed", { id, change: "updated" });
    return this.tree.get(id)!;
  }

  /** Deletes an empty domain: one with sub-domains or anything in it is refused. */
  async deleteDomain(id: string): Promise<void> {
    if (!this.tree.has(id)) throw notFound("DOMAIN_NOT_FOUND", `Domain ${id}`, "id");
    if (id === ROOT_DOMAIN) throw invalid("id", "the root domain cannot be deleted");
    if ([...this.tree.values()].some((d) => d.parent === id)) throw invalid("id", `domain ${id} has sub-domains`);
    await this.store.deleteDomain(id);
    await this.reloadDomains();
    await this.reloadUsers();
    this.bus.emit("domain.changed", { id, change: "deleted" });
  }

  private reloadDomains(): Promise<void> {
    return this.latest(
      "domains",
      () => this.store.domains(),
      (domains) => {
        this.tree = new Map(domains.map((d) => [d.id, d]));
      },
    );
  }

  // ---- users ----

  user(userName: string): User | undefined {
    return this.byName.get(userName);
  }

  /** Every user, by name. */
  users(): User[] {
    return [...this.byName.values()].sort((a, b) => (a.userName < b.userName ? -1 : a.userName > b.userName ? 1 : 0));
  }

  private reloadUsers(): Promise<void> {
    return this.latest(
      "users",
      () => this.store.users(),
      (users) => {
        this.byName.clear();
        for (const u of users) this.byName.set(u.userName, u);
      },
    );
  }

  private reloadUser(userName: string): Promise<void> {
    return this.latest(
      `user:${userName}`,
      () => this.store.user(userName),
      (user) => {
        if (user) this.byName.set(userName, user);
        else this.byName.delete(userName);
      },
    );
  }

  /** Reloads what this process changed of a user and tells the other processes. */
  private async userChanged(userName: string, change: "created" | "updated" | "deleted"): Promise<void> {
    await this.reloadUser(userName);
    this.bus.emit("user.changed", { userName, change });
  }

  async createUser(input: NewUser): Promise<User> {
    if (!ID_PATTERN.test(input.userName)) throw invalid("userName", "1-64 characters of 0-9, A-Z, a-z, '_' or '-'");
    this.checkUserDomains(input.homeDomain, input.privileges);
    const passwordHash = await hashSecret(input.password);
    // Checked again after the await; the store refuses a name taken meanwhile (ALREADY_EXISTS too).
    if (this.user(input.userName)) {
      throw new ApiError("ALREADY_EXISTS", `User ${input.userName} already exists`, "userName");
    }
    this.checkUserDomains(input.homeDomain, input.privileges);
    await this.store.insertUser({
      userName: input.userName,
      passwordHash,
      role: input.role,
      homeDomain: input.homeDomain,
      email: input.email ?? null,
      privileges: input.privileges ?? {},
    });
    await this.userChanged(input.userName, "created");
    return this.user(input.userName)!;
  }

  /** Changes what `change` names; a change that changes nothing writes nothing (provisioning stays idempotent). */
  async updateUser(userName: string, change: UserChange): Promise<User> {
    const before = this.user(userName);
    if (!before) throw notFound("USER_NOT_FOUND", `User ${userName}`, "userName");
    this.checkUserDomains(change.homeDomain ?? before.homeDomain, change.privileges);
    const hash = change.password === undefined ? undefined : await hashSecret(change.password);
    const current = this.user(userName);
    if (!current) throw notFound("USER_NOT_FOUND", `User ${userName}`, "userName");
    const next = {
      role: change.role ?? current.role,
      homeDomain: change.homeDomain ?? current.homeDomain,
      email: change.email === undefined ? current.email : change.email,
      privileges: change.privileges === undefined ? current.privileges : normalizePrivileges(change.privileges),
    };
    const same =
      hash === undefined &&
      next.role === current.role &&
      next.homeDomain === current.homeDomain &&
      next.email === current.email &&
      JSON.stringify(next.privileges) === JSON.stringify(current.privileges);
    if (same) return current;
    this.checkUserDomains(next.homeDomain, next.privileges);
    await this.store.updateUser(userName, {
      role: next.role,
      homeDomain: next.homeDomain,
      email: next.email,
      passwordHash: hash,
      privileges: change.privileges,
    });
    await this.userChanged(userName, "updated");
    return this.user(userName)!;
  }

  async deleteUser(userName: string): Promise<void> {
    if (!(await this.store.deleteUser(userName))) throw notFound("USER_NOT_FOUND", `User ${userName}`, "userName");
    await this.userChanged(userName, "deleted");
  }

  /** The user for a login, or undefined for an unknown user or a wrong password (the caller cannot tell which). */
  async authenticate(userName: string, password: string): Promise<User | undefined> {
    const stored = await this.store.passwordHash(userName);
    if (stored === undefined) {
      // Spend the same time as for a wrong password, so a login cannot tell which user names exist.
      await verifySecret(password, await this.dummyHash());
      return undefined;
    }
    return (await verifySecret(password, stored)) ? this.user(userName) : undefined;
  }

  private dummy: Promise<string> | undefined;
  private dummyHash(): Promise<string> {
    return (this.dummy ??= hashSecret(randomUUID()));
  }

  principal(userName: string): Principal | undefined {
    const user = this.user(userName);
    if (!user) return undefined;
    const grants = new Map(Object.entries(user.privileges).map(([d, ps]) => [d, new Set(ps)]));
    return new Principal(user.userName, user.role, user.homeDomain, grants, this);
  }

  private checkUserDomains(homeDomain: string, privileges: Record<string, string[]> | undefined): void {
    if (!this.tree.has(homeDomain)) throw notFound("DOMAIN_NOT_FOUND", `Domain ${homeDomain}`, "homeDomain");
    for (const [domain, list] of Object.entries(privileges ?? {})) {
      if (!this.tree.has(domain)) throw notFound("DOMAIN_NOT_FOUND", `Domain ${domain}`, "privileges");
      const bad = list.find((p) => !isGrant(p));
      if (bad !== undefined) throw invalid("privileges", `${bad} is not of the form <Resource>.<ACTION>`);
    }
  }

  // ---- API keys ----

  isApiKey(key: string): boolean {
    return this.apiKeyHashes.has(hashApiKey(key));
  }

  /**
   * Adds a key; adding a key that exists already returns the existing one (provisioning is idempotent).
   * A `publicClientKey` is the one GET /metadata/manifest serves; marking one unmarks any other.
   */
  async addApiKey(key: string, label = "", publicClientKey = false): Promise<ApiKeyInfo> {
    const info = await this.store.addApiKey(hashApiKey(key), label, publicClientKey ? key : undefined);
    await this.reloadApiKeys();
    this.bus.emit("apiKey.changed", { change: "created" });
    return info;
  }

  /** The key marked as the public client key, if one is provisioned and not deleted. */
  publicApiKey(): Promise<string | undefined> {
    return this.store.publicApiKey();
  }

  apiKeys(): Promise<ApiKeyInfo[]> {
    return this.store.apiKeys();
  }

  async deleteApiKey(id: string): Promise<void> {
    if (!(await this.store.deleteApiKey(id))) throw notFound("API_KEY_NOT_FOUND", `API key ${id}`, "id");
    await this.reloadApiKeys();
    this.bus.emit("apiKey.changed", { change: "deleted" });
  }

  private reloadApiKeys(): Promise<void> {
    return this.latest(
      "apiKeys",
      () => this.store.apiKeyHashes(),
      (hashes) => {
        this.apiKeyHashes = new Set(hashes);
      },
    );
  }
}
