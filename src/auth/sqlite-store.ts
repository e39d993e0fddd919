import { randomUUID } from "node:crypto";
import { ApiError, invalid } from "../errors/index.js";
import { isoNow, statementCache, type Db } from "../store/index.js";
import type { RoleName } from "./privileges.js";
import {
  ROOT_DOMAIN,
  type ApiKeyInfo,
  type Domain,
  type IdentityStore,
  type RefreshGrant,
  type User,
  type UserRecord,
} from "./store.js";

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

interface RefreshRow {
  family: string;
  user_name: string;
  expires_at: number;
  used_at: number | null;
  revoked_at: number | null;
}

/**
 * Domains, users, API keys and refresh tokens in the process's SQLite database (`authMigrations`).
 * The root domain is written when the store is made, so every store holds it.
 */
export class SqliteIdentityStore implements IdentityStore {
  /** Each SQL text prepared once: the user lookup runs on every request. */
  private readonly q;
  private readonly redeemTx;

  constructor(private readonly db: Db) {
    this.q = statementCache(db);
    const now = isoNow();
    this.q(
      "INSERT OR IGNORE INTO domains (id, parent, label, path, created_at, updated_at) VALUES (?, NULL, ?, ?, ?, ?)",
    ).run(ROOT_DOMAIN, ROOT_DOMAIN, ROOT_DOMAIN, now, now);
    // One IMMEDIATE transaction: two processes on one data dir cannot both redeem a token.
    this.redeemTx = db.transaction((jti: string, userName: string, now: number): RefreshGrant | undefined => {
      const row = this.q<[string], RefreshRow>(
        "SELECT family, user_name, expires_at, used_at, revoked_at FROM refresh_tokens WHERE jti = ?",
      ).get(jti);
      if (!row || row.user_name !== userName || row.revoked_at !== null || row.expires_at <= now) return undefined;
      if (row.used_at !== null) {
        this.q("UPDATE refresh_tokens SET revoked_at = ? WHERE family = ? AND revoked_at IS NULL").run(now, row.family);
        return undefined;
      }
      this.q("UPDATE refresh_tokens SET used_at = ? WHERE jti = ?").run(now, jti);
      return { userName: row.user_name, family: row.family };
    });
  }

  // ---- loads ----

  async domains(): Promise<Domain[]> {
    return this.q<[], DomainRow>("SELECT * FROM domains")
      .all()
      .map((r) => ({
        id: r.id,
        parent: r.parent,
        label: r.label,
        path: r.path,
        createdAt: r.created_at,
        updatedAt: r.updated_at,
      }));
  }

  async user(userName: string): Promise<User | undefined> {
    const row = this.q<[string], UserRow>("SELECT * FROM users WHERE user_name = ?").get(userName);
    return row && this.toUser(row);
  }

  async apiKeyHashes(): Promise<string[]> {
    return this.q<[], { key_hash: string }>("SELECT key_hash FROM api_keys")
      .all()
      .map((r) => r.key_hash);
  }

  // ---- domains ----

  async insertDomain(d: { id: string; parent: string; label: string; path: string }): Promise<void> {
    const now = isoNow();
    this.q("INSERT INTO domains (id, parent, label, path, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)").run(
      d.id,
      d.parent,
      d.label,
      d.path,
      now,
      now,
    );
  }

  async updateDomainLabel(id: string, label: string): Promise<void> {
    this.q("UPDATE domains SET label = ?, updated_at = ? WHERE id = ?").run(label, isoNow(), id);
  }

  async deleteDomain(id: string): Promise<void> {
    try {
      this.q("DELETE FROM domains WHERE id = ?").run(id);
    } catch (e) {
      if (String(e).includes("FOREIGN KEY")) throw invalid("id", `domain ${id} still holds users, things or types`);
      throw e;
    }
  }

  // ---- users ----

  async users(): Promise<User[]> {
    return this.q<[], UserRow>("SELECT * FROM users ORDER BY user_name")
      .all()
      .map((r) => this.toUser(r));
  }

  async passwordHash(userName: string): Promise<string | undefined> {
    return this.q<[string], Pick<UserRow, "password_hash">>("SELECT password_hash FROM users WHERE user_name = ?").get(
      userName,
    )?.password_hash;
  }

  async insertUser(u: UserRecord): Promise<void> {
    const now = isoNow();
    this.db.transaction(() => {
      const { changes } = this.q(
        `INSERT OR IGNORE INTO users (user_name, password_hash, role, home_domain, email, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?)`,
      ).run(u.userName, u.passwordHash, u.role, u.homeDomain, u.email, now, now);
      if (changes === 0) throw new ApiError("ALREADY_EXISTS", `User ${u.userName} already exists`, "userName");
      this.writePrivileges(u.userName, u.privileges);
    })();
  }

  async updateUser(
    userName: string,
    change: Omit<UserRecord, "userName" | "passwordHash" | "privileges"> & {
      passwordHash: string | undefined;
      privileges: Record<string, string[]> | undefined;
    },
  ): Promise<void> {
    this.db.transaction(() => {
      this.q(
        `UPDATE users SET role = ?, home_domain = ?, email = ?, updated_at = ?,
           password_hash = COALESCE(?, password_hash) WHERE user_name = ?`,
      ).run(change.role, change.homeDomain, change.email, isoNow(), change.passwordHash ?? null, userName);
      if (change.privileges) this.writePrivileges(userName, change.privileges);
    })();
  }

  async deleteUser(userName: string): Promise<boolean> {
    return this.q("DELETE FROM users WHERE user_name = ?").run(userName).changes > 0;
  }

  private writePrivileges(userName: string, privileges: Record<string, string[]>): void {
    this.q("DELETE FROM user_privileges WHERE user_name = ?").run(userName);
    const insert = this.q("INSERT OR IGNORE INTO user_privileges (user_name, domain, privilege) VALUES (?, ?, ?)");
    for (const [domain, list] of Object.entries(privileges)) for (const p of list) insert.run(userName, domain, p);
  }

  private toUser(row: UserRow): User {
    const privileges: Record<string, string[]> = {};
    const rows = this.q<[string], { domain: string; privilege: string }>(
      "SELECT domain, privilege FROM user_privileges WHERE user_name = ? ORDER BY domain, privilege",
    ).all(row.user_name);
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

  async addApiKey(hash: string, label: string, publicKey: string | undefined): Promise<ApiKeyInfo> {
    this.db.transaction(() => {
      this.q("INSERT OR IGNORE INTO api_keys (id, key_hash, label, created_at) VALUES (?, ?, ?, ?)").run(
        randomUUID(),
        hash,
        label,
        isoNow(),
      );
      if (publicKey === undefined) return;
      this.q("UPDATE api_keys SET public_key = NULL WHERE key_hash <> ?").run(hash);
      this.q("UPDATE api_keys SET public_key = ? WHERE key_hash = ?").run(publicKey, hash);
    })();
    return this.q<[string], ApiKeyInfo>(
      "SELECT id, label, created_at AS createdAt FROM api_keys WHERE key_hash = ?",
    ).get(hash)!;
  }

  async publicApiKey(): Promise<string | undefined> {
    return this.q<[], { public_key: string }>("SELECT public_key FROM api_keys WHERE public_key IS NOT NULL").get()
      ?.public_key;
  }

  async apiKeys(): Promise<ApiKeyInfo[]> {
    return this.q<[], ApiKeyInfo>(
      "SELECT id, label, created_at AS createdAt FROM api_keys ORDER BY created_at, id",
    ).all();
  }

  async deleteApiKey(id: string): Promise<boolean> {
    return this.q("DELETE FROM api_keys WHERE id = ?").run(id).changes > 0;
  }

  // ---- refresh tokens ----

  async issueRefresh(jti: string, family: string, userName: string, expiresAt: number, now: number): Promise<void> {
    // Expired rows go as tokens are issued, so the table holds the live sessions only.
    this.q("DELETE FROM refresh_tokens WHERE expires_at <= ?").run(now);
    this.q("INSERT INTO refresh_tokens (jti, family, user_name, expires_at) VALUES (?, ?, ?, ?)").run(
      jti,
      family,
      userName,
      expiresAt,
    );
  }

  async redeemRefresh(jti: string, userName: string, now: number): Promise<RefreshGrant | undefined> {
    return this.redeemTx.immediate(jti, userName, now);
  }
}
