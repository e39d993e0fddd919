import { randomUUID } from "node:crypto";
import type { EventBus } from "../bus/index.js";
import { ApiError, invalid, notFound } from "../errors/index.js";
import { isoNow, type Db } from "../store/index.js";
import { hashApiKey, hashSecret, verifySecret } from "./passwords.js";
import { Principal, isGrant, type DomainPaths, type RoleName } from "./privileges.js";

export interface Domain {
  id: string;
  parent: string | null;
  label: string;
  path: string;
  createdAt: string;
  updatedAt: string;
}

export interface User {
  userName: string;
  role: RoleName;
  homeDomain: string;
  email: string | null;
  privileges: Record<string, string[]>;
  createdAt: string;
  updatedAt: string;
}

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

export interface ApiKeyInfo {
  id: string;
  label: string;
  createdAt: string;
}

interface DomainRow {
  id: string;
  parent: string | null;
  label: string;
  path: string;
  created_at: string;
  updated_at: string;
}
interface UserRow {
  user_name: string;
  password_hash: string;
  role: RoleName;
  home_domain: string;
  email: string | null;
  created_at: string;
  updated_at: string;
}

export const ROOT_DOMAIN = "root";

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
 * Domains, users and API keys. The domain tree is small and read on every
 * authorization, so it is held in memory and reloaded on each change.
 */
export class Identity implements DomainPaths {
  private tree = new Map<string, Domain>();
  private apiKeyHashes = new Set<string>();

  constructor(
    private readonly db: Db,
    private readonly bus: EventBus,
  ) {
    this.ensureRoot();
    this.reloadDomains();
    this.reloadApiKeys();
    // Another process sharing the database changed them. Subscribed before anything else that
    // follows domains (the search index reads the tree), so the tree is current when they run.
    bus.follow("domain.changed", (_, remote) => remote && this.reloadDomains());
    bus.follow("apiKey.changed", (_, remote) => remote && this.reloadApiKeys());
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

  createDomain(id: string, parent: string, label?: string): Domain {
    if (!ID_PATTERN.test(id)) throw invalid("id", "1-64 characters of 0-9, A-Z, a-z, '_' or '-'");
    const parentDomain = this.tree.get(parent);
    if (!parentDomain) throw notFound("DOMAIN_NOT_FOUND", `Domain ${parent}`, "parent");
    if (this.tree.has(id)) throw new ApiError("ALREADY_EXISTS", `Domain ${id} already exists`, "id");
    const now = isoNow();
    this.db
      .prepare("INSERT INTO domains (id, parent, label, path, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)")
      .run(id, parent, label ?? id, `${parentDomain.path}/${id}`, now, now);
    this.reloadDomains();
    this.bus.emit("domain.changed", { id, change: "created" });
    return this.tree.get(id)!;
  }

  updateDomain(id: string, label: string): Domain {
    if (!this.tree.has(id)) throw notFound("DOMAIN_NOT_FOUND", `Domain ${id}`, "id");
    this.db.prepare("UPDATE domains SET label = ?, updated_at = ? WHERE id = ?").run(label, isoNow(), id);
    this.reloadDomains();
    this.bus.emit("domain.changed", { id, change: "updated" });
    return this.tree.get(id)!;
  }

  /** Deletes an empty domain: one with sub-domains or anything in it is refused. */
  deleteDomain(id: string): void {
    if (!this.tree.has(id)) throw notFound("DOMAIN_NOT_FOUND", `Domain ${id}`, "id");
    if (id === ROOT_DOMAIN) throw invalid("id", "the root domain cannot be deleted");
    if ([...this.tree.values()].some((d) => d.parent === id)) throw invalid("id", `domain ${id} has sub-domains`);
    try {
      this.db.prepare("DELETE FROM domains WHERE id = ?").run(id);
    } catch (e) {
      if (String(e).includes("FOREIGN KEY")) throw invalid("id", `domain ${id} still holds users, things or types`);
      throw e;
    }
    this.reloadDomains();
    this.bus.emit("domain.changed", { id, change: "deleted" });
  }

  private ensureRoot(): void {
    const now = isoNow();
    this.db
      .prepare(
        "INSERT OR IGNORE INTO domains (id, parent, label, path, created_at, updated_at) VALUES (?, NULL, ?, ?, ?, ?)",
      )
      .run(ROOT_DOMAIN, ROOT_DOMAIN, ROOT_DOMAIN, now, now);
  }

  private reloadDomains(): void {
    const rows = this.db.prepare<[], DomainRow>("SELECT * FROM domains").all();
    this.tree = new Map(
      rows.map((r) => [
        r.id,
        { id: r.id, parent: r.parent, label: r.label, path: r.path, createdAt: r.created_at, updatedAt: r.updated_at },
      ]),
    );
  }

  // ---- users ----

  user(userName: string): User | undefined {
    const row = this.db.prepare<[string], UserRow>("SELECT * FROM users WHERE user_name = ?").get(userName);
    return row && this.toUser(row);
  }

  users(): User[] {
    return this.db
      .prepare<[], UserRow>("SELECT * FROM users ORDER BY user_name")
      .all()
      .map((r) => this.toUser(r));
  }

  async createUser(input: NewUser): Promise<User> {
    if (!ID_PATTERN.test(input.userName)) throw invalid("userName", "1-64 characters of 0-9, A-Z, a-z, '_' or '-'");
    this.checkUserDomains(input.homeDomain, input.privileges);
    const hash = await hashSecret(input.password);
    // Checked after the await: from here to the insert nothing else runs, so two
    // concurrent creates of one name answer ALREADY_EXISTS rather than a constraint error.
    if (this.user(input.userName)) {
      throw new ApiError("ALREADY_EXISTS", `User ${input.userName} already exists`, "userName");
    }
    this.checkUserDomains(input.homeDomain, input.privileges);
    const now = isoNow();
    this.db.transaction(() => {
      this.db
        .prepare(
          "INSERT INTO users (user_name, password_hash, role, home_domain, email, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        )
        .run(input.userName, hash, input.role, input.homeDomain, input.email ?? null, now, now);
      this.writePrivileges(input.userName, input.privileges ?? {});
    })();
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
    this.db.transaction(() => {
      this.db
        .prepare(
          `UPDATE users SET role = ?, home_domain = ?, email = ?, updated_at = ?,
             password_hash = COALESCE(?, password_hash) WHERE user_name = ?`,
        )
        .run(next.role, next.homeDomain, next.email, isoNow(), hash ?? null, userName);
      if (change.privileges) this.writePrivileges(userName, change.privileges);
    })();
    return this.user(userName)!;
  }

  deleteUser(userName: string): void {
    const { changes } = this.db.prepare("DELETE FROM users WHERE user_name = ?").run(userName);
    if (changes === 0) throw notFound("USER_NOT_FOUND", `User ${userName}`, "userName");
  }

  /** The user for a login, or undefined for an unknown user or a wrong password (the caller cannot tell which). */
  async authenticate(userName: string, password: string): Promise<User | undefined> {
    const row = this.db
      .prepare<[string], Pick<UserRow, "password_hash">>("SELECT password_hash FROM users WHERE user_name = ?")
      .get(userName);
    if (!row) {
      // Spend the same time as for a wrong password, so a login cannot tell which user names exist.
      await verifySecret(password, await this.dummyHash());
      return undefined;
    }
    return (await verifySecret(password, row.password_hash)) ? this.user(userName) : undefined;
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

  private writePrivileges(userName: string, privileges: Record<string, string[]>): void {
    this.db.prepare("DELETE FROM user_privileges WHERE user_name = ?").run(userName);
    const insert = this.db.prepare(
      "INSERT OR IGNORE INTO user_privileges (user_name, domain, privilege) VALUES (?, ?, ?)",
    );
    for (const [domain, list] of Object.entries(privileges)) for (const p of list) insert.run(userName, domain, p);
  }

  private toUser(row: UserRow): User {
    const privileges: Record<string, string[]> = {};
    const rows = this.db
      .prepare<[string], { domain: string; privilege: string }>(
        "SELECT domain, privilege FROM user_privileges WHERE user_name = ? ORDER BY domain, privilege",
      )
      .all(row.user_name);
    for (const r of rows) (privileges[r.domain] ??= []).push(r.privilege);
    return {
      userName: row.user_name,
      role: row.role,
      homeDomain: row.home_domain,
      email: row.email,
      privileges,
      createdAt: row.created_at,
      updatedAt: row.updated_at,
    };
  }

  // ---- API keys ----

  isApiKey(key: string): boolean {
    return this.apiKeyHashes.has(hashApiKey(key));
  }

  /**
   * Adds a key; adding a key that exists already returns the existing one (provisioning is idempotent).
   * A `publicClientKey` is the one GET /metadata/manifest serves; marking one unmarks any other.
   */
  addApiKey(key: string, label = "", publicClientKey = false): ApiKeyInfo {
    const hash = hashApiKey(key);
    this.db.transaction(() => {
      this.db
        .prepare("INSERT OR IGNORE INTO api_keys (id, key_hash, label, created_at) VALUES (?, ?, ?, ?)")
        .run(randomUUID(), hash, label, isoNow());
      if (!publicClientKey) return;
      this.db.prepare("UPDATE api_keys SET public_key = NULL WHERE key_hash <> ?").run(hash);
      this.db.prepare("UPDATE api_keys SET public_key = ? WHERE key_hash = ?").run(key, hash);
    })();
    this.reloadApiKeys();
    this.bus.emit("apiKey.changed", { change: "created" });
    return this.db
      .prepare<[string], ApiKeyInfo>("SELECT id, label, created_at AS createdAt FROM api_keys WHERE key_hash = ?")
      .get(hash)!;
  }

  /** The key marked as the public client key, if one is provisioned and not deleted. */
  publicApiKey(): string | undefined {
    return this.db
      .prepare<[], { public_key: string }>("SELECT public_key FROM api_keys WHERE public_key IS NOT NULL")
      .get()?.public_key;
  }

  apiKeys(): ApiKeyInfo[] {
    return this.db
      .prepare<[], ApiKeyInfo>("SELECT id, label, created_at AS createdAt FROM api_keys ORDER BY created_at, id")
      .all();
  }

  deleteApiKey(id: string): void {
    const { changes } = this.db.prepare("DELETE FROM api_keys WHERE id = ?").run(id);
    if (changes === 0) throw notFound("API_KEY_NOT_FOUND", `API key ${id}`, "id");
    this.reloadApiKeys();
    this.bus.emit("apiKey.changed", { change: "deleted" });
  }

  private reloadApiKeys(): void {
    const rows = this.db.prepare<[], { key_hash: string }>("SELECT key_hash FROM api_keys").all();
    this.apiKeyHashes = new Set(rows.map((r) => r.key_hash));
  }
}
