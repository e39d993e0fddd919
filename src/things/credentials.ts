import { createHash, createHmac, pbkdf2, randomBytes, timingSafeEqual } from "node:crypto";
import { availableParallelism } from "node:os";
import { LRUCache } from "lru-cache";
import { Counter, type Registry } from "prom-client";
import { verifySecret } from "../auth/index.js";

/**
 * Device secrets come in two kinds, told apart by the secret itself:
 *
 * - **generated**: `dmsd_` + base64url of 24 random bytes and a 4-byte
 *   checksum (the first bytes of their SHA-256). 192 bits of entropy cannot be
 *   guessed, so a keyed hash (HMAC-SHA256 with the server key) protects them as
 *   well as a slow KDF would, at about a microsecond per hash or check. The
 *   checksum makes sure that only a generator produces this shape: a secret
 *   typed by hand never passes for a generated one.
 * - **chosen**: anything else, supplied by an operator. These are machine
 *   credentials, not people's passwords: they must be at least
 *   `MIN_CHOSEN_SECRET_LENGTH` characters (80 bits even when written in hex),
 *   which makes PBKDF2-SHA512 at `PBKDF2_ITERATIONS` (the cost of Mosquitto's
 *   password files) safe, at about a tenth of a millisecond per hash instead of
 *   scrypt's tens. They are hashed in libuv's thread pool (every core, never the
 *   event loop), at most `kdfConcurrency` in flight, and a device's verified
 *   secret is cached in memory so that its reconnects cost no hash at all.
 *
 * Hashes stored as scrypt (`scrypt$…`, by older versions) keep verifying and are
 * replaced by the scheme above on the first successful check.
 */
export const GENERATED_PREFIX = "dmsd_";
/** The shortest chosen secret accepted. */
export const MIN_CHOSEN_SECRET_LENGTH = 20;
const PBKDF2_SCHEME = "pbkdf2-sha512";
const PBKDF2_ITERATIONS = 101;
const PBKDF2_SALT_BYTES = 16;
const PBKDF2_KEY_BYTES = 64;
/** `pbkdf2-sha512$<iterations>$<salt>$<hash>`, salt and hash in base64url: what `secretHash` in a provisioning file holds. */
const PBKDF2_HASH = /^pbkdf2-sha512\$([1-9][0-9]{0,6})\$([A-Za-z0-9_-]{16,})\$([A-Za-z0-9_-]{86})$/;
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

/** Whether `stored` is a chosen secret's hash in the current scheme (a pre-hashed secret is checked with this). */
export function isDeviceSecretHash(stored: string): boolean {
  const parts = PBKDF2_HASH.exec(stored);
  return parts !== null && Number(parts[1]) >= PBKDF2_ITERATIONS;
}

function pbkdf2Key(secret: string, salt: Buffer, iterations: number): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    pbkdf2(secret, salt, iterations, PBKDF2_KEY_BYTES, "sha512", (err, key) => (err ? reject(err) : resolve(key))),
  );
}

/** A chosen secret's stored form (thread pool, about a tenth of a millisecond); also what `npm run provision:hash` writes. */
export async function hashChosenSecret(secret: string): Promise<string> {
  const salt = randomBytes(PBKDF2_SALT_BYTES);
  const key = await pbkdf2Key(secret, salt, PBKDF2_ITERATIONS);
  return [PBKDF2_SCHEME, PBKDF2_ITERATIONS, salt.toString("base64url"), key.toString("base64url")].join("$");
}

async function verifyChosenSecret(secret: string, stored: string): Promise<boolean> {
  const parts = PBKDF2_HASH.exec(stored);
  if (!parts) return false;
  const expected = Buffer.from(parts[3]!, "base64url");
  const key = await pbkdf2Key(secret, Buffer.from(parts[2]!, "base64url"), Number(parts[1]));
  return timingSafeEqual(key, expected);
}

/** Too many slow verifications are waiting: the caller should come back later. */
export class CredentialsBusyError extends Error {
  constructor() {
    super("too many device secret verifications waiting");
  }
}

export interface DeviceCredentialsOptions {
  key: Buffer;
  /** Hashes of chosen secrets in flight at once: by default four per core, so that libuv's pool never waits for the event loop. */
  kdfConcurrency?: number;
  /** Hashes allowed to wait; more are refused (`CredentialsBusyError`), never queued without end. */
  kdfQueueLimit?: number;
  /** Verified chosen secrets kept (one per device that connected). */
  cacheSize?: number;
}

/** What checking a secret against a stored hash found. */
export interface Verdict {
  ok: boolean;
  /** A secret that matched an older scrypt hash: store this hash of the current scheme instead. */
  upgrade?: string;
}

/** Work done, for tests and metrics: hashes and checks computed, by kind. */
export interface CredentialWork {
  /** HMAC-SHA256 hashes of generated secrets (creating or checking one). */
  keyed: number;
  /** PBKDF2 hashes of chosen secrets (creating or checking one). */
  pbkdf2: number;
  /** scrypt derivations (checking a hash stored by an older version). */
  kdf: number;
  /** Chosen secrets accepted from the cache without a derivation. */
  cacheHits: number;
}

/**
 * Hashes and checks device secrets (see the kinds above). The stored forms are
 * `hmac-sha256$<keyId>$<mac>`, `pbkdf2-sha512$<iterations>$<salt>$<hash>` and
 * (older) `scrypt$N$r$p$salt$hash`; the key id names
 * the server key so that a hash made with another key is refused, not misread.
 */
export class DeviceCredentials {
  readonly work: CredentialWork = { keyed: 0, pbkdf2: 0, kdf: 0, cacheHits: 0 };
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
    this.kdfConcurrency = options.kdfConcurrency ?? 4 * availableParallelism();
    this.kdfQueueLimit = options.kdfQueueLimit ?? 20_000;
  }

  /** The stored form of a generated secret: synchronous, about a microsecond. */
  keyedHash(thingName: string, secret: string): string {
    this.work.keyed++;
    return `${HMAC_SCHEME}$${this.keyId}$${this.mac(thingName, secret)}`;
  }

  /**
   * The stored form of any secret: keyed for generated ones, PBKDF2 (thread
   * pool) for chosen ones, whose length the caller has checked.
   */
  hash(thingName: string, secret: string): string | Promise<string> {
    if (isGeneratedSecret(secret)) return this.keyedHash(thingName, secret);
    return this.slow(() => {
      this.work.pbkdf2++;
      return hashChosenSecret(secret);
    });
  }

  /**
   * Whether `secret` is the one `stored` was made from. Generated secrets are
   * checked synchronously (a Verdict, not a Promise), chosen ones through the
   * cache or else PBKDF2 (or an older scrypt hash) in the thread pool.
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
    const legacy = stored.startsWith("scrypt$");
    const check = legacy
      ? () => {
          this.work.kdf++;
          return verifySecret(secret, stored);
        }
      : () => {
          this.work.pbkdf2++;
          return verifyChosenSecret(secret, stored);
        };
    return this.slow(check).then(async (ok): Promise<Verdict> => {
      if (!ok) return { ok };
      this.verified.set(cacheKey, stored);
      if (!legacy) return { ok };
      // A hash stored by an older version as scrypt: move it to the current scheme (a short secret stays scrypt).
      if (isGeneratedSecret(secret)) return { ok, upgrade: this.keyedHash(thingName, secret) };
      return secret.length >= MIN_CHOSEN_SECRET_LENGTH ? { ok, upgrade: await this.hash(thingName, secret) } : { ok };
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

  /** Runs a hash when a slot is free, so that a storm of them cannot take every pool thread. */
  private async slow<T>(derive: () => Promise<T>): Promise<T> {
    if (this.kdfRunning >= this.kdfConcurrency) {
      if (this.kdfWaiting.length >= this.kdfQueueLimit) throw new CredentialsBusyError();
      await new Promise<void>((resolve) => this.kdfWaiting.push(resolve));
    } else {
      this.kdfRunning++;
    }
    try {
      return await derive();
    } finally {
      // The slot passes straight to the next waiter, or is freed.
      const next = this.kdfWaiting.shift();
      if (next) next();
      else this.kdfRunning--;
    }
  }
}

/** `dms_device_secret_hashes_total{kind}`: the work `credentials` did (keyed, pbkdf2, kdf, cache_hit). */
export function registerCredentialMetrics(credentials: DeviceCredentials, registry: Registry): void {
  const counter: Counter<"kind"> = new Counter({
    name: "dms_device_secret_hashes_total",
    help: "Device secrets hashed or checked, by kind: keyed (HMAC, generated secrets), pbkdf2 (chosen secrets), kdf (scrypt, hashes stored by older versions), cache_hit (a chosen secret accepted without a hash)",
    labelNames: ["kind"],
    registers: [registry],
    collect() {
      counter.reset();
      counter.inc({ kind: "keyed" }, credentials.work.keyed);
      counter.inc({ kind: "pbkdf2" }, credentials.work.pbkdf2);
      counter.inc({ kind: "kdf" }, credentials.work.kdf);
      counter.inc({ kind: "cache_hit" }, credentials.work.cacheHits);
    },
  });
}
