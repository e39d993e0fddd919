import { randomUUID } from "node:crypto";
import { ApiError, invalid } from "../errors/index.js";
import { pgQuery, pgTransaction, type PgPool, type PgQueryable } from "../store/index.js";
import type { RoleName } from "./privileges.js";
import {
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
  created_at: Date;
  updated_at: Date;
}

interface UserRow {
  user_name: string;
  role: RoleName;
  home_domain: string;
  email: string | null;
  created_at: Date;
  updated_at: Date;
  /** `[domain, privilege]` pairs, sorted. */
  privileges: [string, string][] | null;
}

interface RefreshRow {
  family: string;
  user_name: string;
  expires_at: number;
  used_at: number | null;
  revoked_at: number | null;
}

/** A user with its privileges in one statement: the privileges folded into an array of pairs. */
const USER_SELECT = `
  SELECT u.user_name, u.role, u.home_domain, u.email, u.created_at, u.updated_at,
         (SELECT array_agg(ARRAY[p.domain, p.privilege] ORDER BY p.domain COLLATE "C", p.privilege COLLATE "C")
            FROM user_privileges p WHERE p.user_name = u.user_name) AS privileges
    FROM users u`;

/**
 * What still lives in a domain and keeps it from being deleted. The other seams' tables are on the
 * same database (every seam is migrated together), as SQLite's foreign keys find them there.
 */
const DOMAIN_IN_USE = `
  SELECT EXISTS (SELECT 1 FROM users WHERE home_domain = $1)
      OR EXISTS (SELECT 1 FROM thing_types WHERE domain = $1)
      OR EXISTS (SELECT 1 FROM things WHERE domain = $1)
      OR EXISTS (SELECT 1 FROM thing_groups WHERE domain = $1)
      OR EXISTS (SELECT 1 FROM rules WHERE domain = $1) AS in_use`;

/** PostgreSQL's SQLSTATE for a unique or primary key violation. */
const UNIQUE_VIOLATION = "23505";

function toUser(row: UserRow): User {
  const privileges: Record<string, string[]> = {};
  for (const [domain, privilege] of row.privileges ?? []) (privileges[domain] ??= []).push(privilege);
  return {
    userName: row.user_name,
    role: row.role,
    homeDomain: row.home_domain,
    email: row.email,
    privileges,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/**
 * Domains, users, API keys and refresh tokens in PostgreSQL (`identityPgMigrations`), shared by
 * every process of a cluster. The migrations write the root domain.
 */
export class PgIdentityStore implements IdentityStore {
  constructor(private readonly pool: PgPool) {}

  // ---- loads ----

  async domains(): Promise<Domain[]> {
    const { rows } = await pgQuery<DomainRow>(this.pool, "SELECT * FROM domains");
    return rows.map((r) => ({
      id: r.id,
      parent: r.parent,
      label: r.label,
      path: r.path,
      createdAt: r.created_at.toISOString(),
      updatedAt: r.updated_at.toISOString(),
    }));
  }

  async users(): Promise<User[]> {
    const { rows } = await pgQuery<UserRow>(this.pool, `${USER_SELECT} ORDER BY u.user_name COLLATE "C"`);
    return rows.map(toUser);
  }

  async user(userName: string): Promise<User | undefined> {
    const { rows } = await pgQuery<UserRow>(this.pool, `${USER_SELECT} WHERE u.user_name = $1`, [userName]);
    return rows[0] && toUser(rows[0]);
  }

  async apiKeyHashes(): Promise<string[]> {
    const { rows } = await pgQuery<{ key_hash: string }>(this.pool, "SELECT key_hash FROM api_keys");
    return rows.map((r) => r.key_hash);
  }

  // ---- domains ----

  async insertDomain(d: { id: string; parent: string; label: string; path: string }): Promise<void> {
    await this.pool.query(
      "INSERT INTO domains (id, parent, label, path, created_at, updated_at) VALUES ($1, $2, $3, $4, now(), now())",
      [d.id, d.parent, d.label, d.path],
    );
  }

  async updateDomainLabel(id: string, label: string): Promise<void> {
    await this.pool.query("UPDATE domains SET label = $2, updated_at = now() WHERE id = $1", [id, label]);
  }

  async deleteDomain(id: string): Promise<void> {
    await pgTransaction(this.pool, async (tx) => {
      // The row lock makes a concurrent delete of the same domain wait for this one's answer.
      await tx.query("SELECT id FROM domains WHERE id = $1 FOR UPDATE", [id]);
      const { rows } = await pgQuery<{ in_use: boolean }>(tx, DOMAIN_IN_USE, [id]);
      if (rows[0]?.in_use) throw invalid("id", `domain ${id} still holds users, things or types`);
      await tx.query("DELETE FROM domains WHERE id = $1", [id]);
    });
  }

  // ---- users ----

  async passwordHash(userName: string): Promise<string | undefined> {
    const { rows } = await pgQuery<{ password_hash: string }>(
      this.pool,
      "SELECT password_hash FROM users WHERE user_name = $1",
      [userName],
    );
    return rows[0]?.password_hash;
  }

  async insertUser(u: UserRecord): Promise<void> {
    await pgTransaction(this.pool, async (tx) => {
      const { rowCount } = await pgQuery(
        tx,
        `INSERT INTO users (user_name, password_hash, role, home_domain, email, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, now(), now()) ON CONFLICT (user_name) DO NOTHING`,
        [u.userName, u.passwordHash, u.role, u.homeDomain, u.email],
      );
      if (rowCount === 0) throw new ApiError("ALREADY_EXISTS", `User ${u.userName} already exists`, "userName");
      await writePrivileges(tx, u.userName, u.privileges);
    });
  }

  async updateUser(
    userName: string,
    change: Omit<UserRecord, "userName" | "passwordHash" | "privileges"> & {
      passwordHash: string | undefined;
      privileges: Record<string, string[]> | undefined;
    },
  ): Promise<void> {
    await pgTransaction(this.pool, async (tx) => {
      await tx.query(
        `UPDATE users SET role = $2, home_domain = $3, email = $4, updated_at = now(),
           password_hash = COALESCE($5, password_hash) WHERE user_name = $1`,
        [userName, change.role, change.homeDomain, change.email, change.passwordHash ?? null],
      );
      if (change.privileges) await writePrivileges(tx, userName, change.privileges);
    });
  }

  async deleteUser(userName: string): Promise<boolean> {
    const { rowCount } = await pgQuery(this.pool, "DELETE FROM users WHERE user_name = $1", [userName]);
    return rowCount > 0;
  }

  // ---- API keys ----

  async addApiKey(hash: string, label: string, publicKey: string | undefined): Promise<ApiKeyInfo> {
    return pgTransaction(this.pool, async (tx) => {
      await tx.query(
        `INSERT INTO api_keys (id, key_hash, label, created_at) VALUES ($1, $2, $3, now())
         ON CONFLICT (key_hash) DO NOTHING`,
        [randomUUID(), hash, label],
      );
      if (publicKey !== undefined) {
        await tx.query("UPDATE api_keys SET public_key = NULL WHERE key_hash <> $1 AND public_key IS NOT NULL", [hash]);
        await tx.query("UPDATE api_keys SET public_key = $2 WHERE key_hash = $1", [hash, publicKey]);
      }
      const { rows } = await pgQuery<{ id: string; label: string; created_at: Date }>(
        tx,
        "SELECT id, label, created_at FROM api_keys WHERE key_hash = $1",
        [hash],
      );
      const row = rows[0]!;
      return { id: row.id, label: row.label, createdAt: row.created_at.toISOString() };
    }).catch((err: unknown) => {
      // Two processes adding the same key at once: the loser's insert met the winner's row.
      if ((err as { code?: string }).code === UNIQUE_VIOLATION) return this.addApiKey(hash, label, publicKey);
      throw err;
    });
  }

  async publicApiKey(): Promise<string | undefined> {
    const { rows } = await pgQuery<{ public_key: string }>(
      this.pool,
      "SELECT public_key FROM api_keys WHERE public_key IS NOT NULL",
    );
    return rows[0]?.public_key;
  }

  async apiKeys(): Promise<ApiKeyInfo[]> {
    const { rows } = await pgQuery<{ id: string; label: string; created_at: Date }>(
      this.pool,
      'SELECT id, label, created_at FROM api_keys ORDER BY created_at, id COLLATE "C"',
    );
    return rows.map((r) => ({ id: r.id, label: r.label, createdAt: r.created_at.toISOString() }));
  }

  async deleteApiKey(id: string): Promise<boolean> {
    const { rowCount } = await pgQuery(this.pool, "DELETE FROM api_keys WHERE id = $1", [id]);
    return rowCount > 0;
  }

  // ---- refresh tokens ----

  async issueRefresh(jti: string, family: string, userName: string, expiresAt: number, now: number): Promise<void> {
    // Expired rows go as tokens are issued, so the table holds the live sessions only.
    await this.pool.query("DELETE FROM refresh_tokens WHERE expires_at <= $1", [now]);
    await this.pool.query("INSERT INTO refresh_tokens (jti, family, user_name, expires_at) VALUES ($1, $2, $3, $4)", [
      jti,
      family,
      userName,
      expiresAt,
    ]);
  }

  async redeemRefresh(jti: string, userName: string, now: number): Promise<RefreshGrant | undefined> {
    return pgTransaction(this.pool, async (tx) => {
      // The row lock serialises two processes redeeming the same token: the second sees it used.
      const { rows } = await pgQuery<RefreshRow>(
        tx,
        "SELECT family, user_name, expires_at, used_at, revoked_at FROM refresh_tokens WHERE jti = $1 FOR UPDATE",
        [jti],
      );
      const row = rows[0];
      if (!row || row.user_name !== userName || row.revoked_at !== null || row.expires_at <= now) return undefined;
      if (row.used_at !== null) {
        await tx.query("UPDATE refresh_tokens SET revoked_at = $1 WHERE family = $2 AND revoked_at IS NULL", [
          now,
          row.family,
        ]);
        return undefined;
      }
      await tx.query("UPDATE refresh_tokens SET used_at = $1 WHERE jti = $2", [now, jti]);
      return { userName: row.user_name, family: row.family };
    });
  }
}

/** Replaces a user's privileges with `privileges`, in the caller's transaction. */
async function writePrivileges(tx: PgQueryable, userName: string, privileges: Record<string, string[]>): Promise<void> {
  await tx.query("DELETE FROM user_privileges WHERE user_name = $1", [userName]);
  const domains: string[] = [];
  const grants: string[] = [];
  for (const [domain, list] of Object.entries(privileges)) {
    for (const p of list) {
      domains.push(domain);
      grants.push(p);
    }
  }
  if (domains.length === 0) return;
  await tx.query(
    `INSERT INTO user_privileges (user_name, domain, privilege)
     SELECT $1, d, p FROM unnest($2::text[], $3::text[]) AS g(d, p) ON CONFLICT DO NOTHING`,
    [userName, domains, grants],
  );
}
