import type { RoleName } from "./privileges.js";

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

export interface ApiKeyInfo {
  id: string;
  label: string;
  createdAt: string;
}

/** The root of the domain tree: every store holds it from its creation on. */
export const ROOT_DOMAIN = "root";

/** A refresh token that was redeemed: whose it is and the family its successor joins. */
export interface RefreshGrant {
  userName: string;
  family: string;
}

/** A user as written: its password already hashed, its privileges already checked. */
export interface UserRecord {
  userName: string;
  passwordHash: string;
  role: RoleName;
  homeDomain: string;
  email: string | null;
  privileges: Record<string, string[]>;
}

/**
 * What `Identity` loads into memory at start and reloads on change: every request's principal,
 * the domain tree and the API key hashes are answered from memory, never with a round trip,
 * whichever database is behind the store.
 */
export interface IdentityLoads {
  /** Every domain, in no particular order. */
  domains(): Promise<Domain[]>;
  /** Every user, by name. */
  users(): Promise<User[]>;
  user(userName: string): Promise<User | undefined>;
  /** The SHA-256 hashes of the API keys (`hashApiKey`). */
  apiKeyHashes(): Promise<string[]>;
}

/**
 * Refresh tokens as issued and redeemed (see `Tokens`): each is good for one exchange, and one
 * presented again revokes its whole family. `now` is epoch ms of the caller's clock.
 */
export interface RefreshTokenStore {
  /** Records a token issued to `userName` in `family`, valid until `expiresAt`; drops the expired ones. */
  issueRefresh(jti: string, family: string, userName: string, expiresAt: number, now: number): Promise<void>;
  /**
   * Uses the token up, atomically: its grant, or undefined when it is unknown, someone else's,
   * expired, revoked or used (a used one revokes its family).
   */
  redeemRefresh(jti: string, userName: string, now: number): Promise<RefreshGrant | undefined>;
}

/**
 * Where domains, users, API keys and refresh tokens are kept, each method one atomic operation; the store does not announce changes (`Identity` does, once they are stored).
 */
export interface IdentityStore extends IdentityLoads, RefreshTokenStore {
  /** Adds a domain under `parent`; `path` is the parent's path and `/<id>`. */
  insertDomain(domain: { id: string; parent: string; label: string; path: string }): Promise<void>;
  updateDomainLabel(id: string, label: string): Promise<void>;
  /** Deletes the domain; INVALID_ARGUMENTS (property `id`) while users, things or types still are in it. */
  deleteDomain(id: string): Promise<void>;

  /** The stored password hash of a user, or undefined for an unknown one. */
  passwordHash(userName: string): Promise<string | undefined>;
  /** Adds a user with its privileges; ALREADY_EXISTS (property `userName`) when the name is taken. */
  insertUser(user: UserRecord): Promise<void>;
  /**
   * Changes role, home domain and e-mail; the password hash when `passwordHash` is given, the
   * privileges (replaced as a whole) when `privileges` is.
   */
  updateUser(
    userName: string,
    change: Omit<UserRecord, "userName" | "passwordHash" | "privileges"> & {
      passwordHash: string | undefined;
      privileges: Record<string, string[]> | undefined;
    },
  ): Promise<void>;
  /** Answers whether there was such a user. */
  deleteUser(userName: string): Promise<boolean>;

  /**
   * Adds a key by its hash unless it is there; `publicKey` (the key in clear) marks it the public
   * client key and unmarks any other. Answers the stored key.
   */
  addApiKey(hash: string, label: string, publicKey: string | undefined): Promise<ApiKeyInfo>;
  /** The key marked as the public client key, if one is. */
  publicApiKey(): Promise<string | undefined>;
  /** By creation time. */
  apiKeys(): Promise<ApiKeyInfo[]>;
  /** Answers whether there was such a key. */
  deleteApiKey(id: string): Promise<boolean>;
}
