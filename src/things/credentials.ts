import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { LRUCache } from "lru-cache";
import { Counter, type Registry } from "prom-client";
import { hashSecret, verifySecret } from "../auth/index.js";
import { ensureDir } from "../store/index.js";

/**
 * Device secrets come in two kinds, told apart by the secret itself:
 *
 * - **generated**: `dmsd_` + base64url of 24 random bytes and a 4-byte
 *   checksum (the first bytes of their SHA-256). 192 bits of entropy cannot be
 *   guessed, so a keyed hash (HMAC-SHA256 with the server key) protects them as
 *   well as a slow KDF would, at about a microsecond per hash or check. The
 *   checksum makes sure that only a generator produces this shape: a secret
 *   typed by hand never passes for a generated one.
 * - **chosen**: anything else (and every secret stored before this scheme).
 *   These may be guessable, so they get scrypt: in libuv's thread pool (never
 *   on the event loop), at most `kdfConcurrency` at a time, and a device's
 *   verified secret is cached in memory so that its reconnects cost no KDF.
 */
export const GENERATED_PREFIX = "dmsd_";
const RANDOM_BYTES = 24;
const CHECK_BYTES = 4;
const GENERATED = /^dmsd_[A-Za-z0-9_-]{38}$/;
const HMAC_SCHEME = "hmac-sha256";

/** A new generated device secret (192 random bits in the checksummed shape above). */
export function generateDeviceSecret(): string {
  const random = randomBytes(RANDOM_BYTES);
  const check = createHash("sha256").update(random).digest().subarray(0, CHECK_BYTES);
  return GENERATED_PREFIX + Buffer.concat([random, check]).toString("base64url");
}

export function isGeneratedSecret(secret: string): boolean {
  if (!GENERATED.test(secret)) return false;
  const bytes = Buffer.from(secret.slice(GENERATED_PREFIX.length), "base64url");
  const random = bytes.subarray(0, RANDOM_BYTES);
  const check = createHash("sha256").update(random).digest().subarray(0, CHECK_BYTES);
  return bytes.length === RANDOM_BYTES + CHECK_BYTES && timingSafeEqual(check, bytes.subarray(RANDOM_BYTES));
}

/**
 * The server key of device credentials, generated once and kept in the data
 * dir beside the database (never in it: a leaked database backup alone does not
 * let anyone test secrets against it). Every process on the data dir reads the
 * same file; the exclusive create decides between two that start at once.
 * Deliberately not derived from DMS_JWT_SECRET: rotating that must not lock
 * every device out.
 */
export function deviceSecretKey(dataDir: string): Buffer {
  if (dataDir === ":memory:") return randomBytes(32);
  const file = join(ensureDir(dataDir), "device-secret-key");
  if (!existsSync(file)) {
    try {
      writeFileSync(file, randomBytes(32).toString("base64url"), { mode: 0o600, flag: "wx" });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
  }
  return Buffer.from(readFileSync(file, "utf8").trim(), "base64url");
}

/** Too many slow verifications are waiting: the caller should come back later. */
export class CredentialsBusyError extends Error {
  constructor() {
    super("too many device secret verifications waiting");
  }
}

export interface DeviceCredentialsOptions {
  key: Buffer;
  /** Slow KDF derivations running at once (each takes a thread of libuv's pool and 32 MiB). */
  kdfConcurrency?: number;
  /** Slow derivations allowed to wait; more are refused (`CredentialsBusyError`), never queued without end. */
  kdfQueueLimit?: number;
  /** Verified chosen secrets kept (one per device that connected). */
  cacheSize?: number;
}

/** What checking a secret against a stored hash found. */
export interface Verdict {
  ok: boolean;
  /** A generated secret that matched an older scrypt hash: store this keyed hash instead. */
  upgrade?: string;
}

/** Work done, for tests and metrics: hashes and checks computed, by kind. */
export interface CredentialWork {
  /** HMAC-SHA256 hashes of generated secrets (creating or checking one). */
  keyed: number;
  /** scrypt derivations of chosen secrets (creating or checking one). */
  kdf: number;
  /** Chosen secrets accepted from the cache without a derivation. */
  cacheHits: number;
}

/**
 * Hashes and checks device secrets (see the kinds above). The stored forms are
 * `hmac-sha256$<keyId>$<mac>` and `scrypt$N$r$p$salt$hash`; the key id names
 * the server key so that a hash made with another key is refused, not misread.
 */
export class DeviceCredentials {
  readonly work: CredentialWork = { keyed: 0, kdf: 0, cacheHits: 0 };
  private readonly keyId: string;
  /** Random per process: the cache keys are useless outside it. */
  private readonly cacheKey = randomBytes(32);
  /**
   * thingName + a keyed digest of the secret → the stored hash it was checked
   * against. A wrong secret has another digest, so it never meets the right
   * one's entry; a changed secret has another stored hash, so an old entry no
   * longer matches.
   */
  private readonly verified: LRUCache<string, string>;
  private readonly kdfConcurrency: number;
  private readonly kdfQueueLimit: number;
  private kdfRunning = 0;
  private readonly kdfWaiting: (() => void)[] = [];

  constructor(private readonly options: DeviceCredentialsOptions) {
    this.keyId = createHash("sha256").update(options.key).digest("hex").slice(0, 8);
    this.verified = new LRUCache({ max: options.cacheSize ?? 200_000 });
    this.kdfConcurrency = options.kdfConcurrency ?? 2;
    this.kdfQueueLimit = options.kdfQueueLimit ?? 20_000;
  }

  /** The stored form of a generated secret: synchronous, about a microsecond. */
  keyedHash(thingName: string, secret: string): string {
    this.work.keyed++;
    return `${HMAC_SCHEME}$${this.keyId}$${this.mac(thingName, secret)}`;
  }

  /** The stored form of any secret: keyed for generated ones, scrypt (thread pool) for the others. */
  hash(thingName: string, secret: string): string | Promise<string> {
    if (isGeneratedSecret(secret)) return this.keyedHash(thingName, secret);
    return this.slow(() => hashSecret(secret));
  }

  /**
   * Whether `secret` is the one `stored` was made from. Generated secrets are
   * checked synchronously (a Verdict, not a Promise), chosen ones through the
   * cache or else scrypt in the thread pool.
   */
  verify(thingName: string, secret: string, stored: string): Verdict | Promise<Verdict> {
    if (stored.startsWith(`${HMAC_SCHEME}$`)) {
      const [, keyId, mac] = stored.split("$");
      // The MAC alone decides (a string that is not a generated secret cannot have its MAC): no check
      // digest nor base64 round trip on the connect path, which a reconnect storm runs ten thousand times.
      if (keyId !== this.keyId || !mac || !GENERATED.test(secret)) return { ok: false };
      this.work.keyed++;
      const expected = Buffer.from(mac, "base64url");
      const actual = this.macBytes(thingName, secret);
      return { ok: expected.length === actual.length && timingSafeEqual(expected, actual) };
    }
    const cacheKey = this.cacheKeyOf(thingName, secret);
    if (this.verified.get(cacheKey) === stored) {
      this.work.cacheHits++;
      return { ok: true };
    }
    return this.slow(() => verifySecret(secret, stored)).then((ok): Verdict => {
      if (!ok) return { ok };
      this.verified.set(cacheKey, stored);
      // A generated secret stored by an older version as scrypt: move it to the keyed hash.
      return isGeneratedSecret(secret) ? { ok, upgrade: this.keyedHash(thingName, secret) } : { ok };
    });
  }

  /**
   * A digest of what the provisioning file said for one thing, secret
   * included, so that an unchanged entry is recognised without hashing its
   * secret again. Keyed with the server key: the database alone tells nothing.
   */
  entryDigest(entry: object): string {
    return createHmac("sha256", this.options.key)
      .update("provision\0")
      .update(JSON.stringify(entry))
      .digest("base64url");
  }

  private mac(thingName: string, secret: string): string {
    return this.macBytes(thingName, secret).toString("base64url");
  }

  private macBytes(thingName: string, secret: string): Buffer {
    // The thing's name is in the MAC: a hash copied to another thing's row does not let its secret in.
    return createHmac("sha256", this.options.key)
      .update("device-secret\0")
      .update(thingName)
      .update("\0")
      .update(secret)
      .digest();
  }

  private cacheKeyOf(thingName: string, secret: string): string {
    return `${thingName}\0${createHmac("sha256", this.cacheKey).update(secret).digest("base64url")}`;
  }

  /** Runs a scrypt derivation when a slot is free, so that a storm of them cannot take every pool thread. */
  private async slow<T>(derive: () => Promise<T>): Promise<T> {
    if (this.kdfRunning >= this.kdfConcurrency) {
      if (this.kdfWaiting.length >= this.kdfQueueLimit) throw new CredentialsBusyError();
      await new Promise<void>((resolve) => this.kdfWaiting.push(resolve));
    } else {
      this.kdfRunning++;
    }
    try {
      this.work.kdf++;
      return await derive();
    } finally {
      // The slot passes straight to the next waiter, or is freed.
      const next = this.kdfWaiting.shift();
      if (next) next();
      else this.kdfRunning--;
    }
  }
}

/** `dms_device_secret_hashes_total{kind}`: the work `credentials` did (keyed, kdf, cache_hit). */
export function registerCredentialMetrics(credentials: DeviceCredentials, registry: Registry): void {
  const counter: Counter<"kind"> = new Counter({
    name: "dms_device_secret_hashes_total",
    help: "Device secrets hashed or checked, by kind: keyed (HMAC, generated secrets), kdf (scrypt, chosen secrets), cache_hit (a chosen secret accepted without scrypt)",
    labelNames: ["kind"],
    registers: [registry],
    collect() {
      counter.reset();
      counter.inc({ kind: "keyed" }, credentials.work.keyed);
      counter.inc({ kind: "kdf" }, credentials.work.kdf);
      counter.inc({ kind: "cache_hit" }, credentials.work.cacheHits);
    },
  });
}
