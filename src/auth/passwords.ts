import { randomBytes, scrypt, timingSafeEqual, createHash, type ScryptOptions } from "node:crypto";

// scrypt parameters: N=2^15 keeps a hash near 50 ms on a small server core, memory 32 MiB.
const PARAMS: ScryptOptions = { N: 1 << 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 };
const KEY_LENGTH = 32;

function derive(secret: string, salt: Buffer, params: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(secret, salt, KEY_LENGTH, params, (err, key) => (err ? reject(err) : resolve(key))),
  );
}

/** `scrypt$N$r$p$salt$hash`, so that parameters can be raised without breaking stored hashes. */
export async function hashSecret(secret: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(secret, salt, PARAMS);
  return ["scrypt", PARAMS.N, PARAMS.r, PARAMS.p, salt.toString("base64"), key.toString("base64")].join("$");
}

export async function verifySecret(secret: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split("$");
  if (scheme !== "scrypt" || !salt || !hash) return false;
  const expected = Buffer.from(hash, "base64");
  const params = { N: Number(n), r: Number(r), p: Number(p), maxmem: PARAMS.maxmem };
  const key = await derive(secret, Buffer.from(salt, "base64"), params);
  return key.length === expected.length && timingSafeEqual(key, expected);
}

/** API keys are long random strings: a plain SHA-256 is enough to not keep them in clear. */
export function hashApiKey(key: string): string {
  return createHash("sha256").update(key).digest("hex");
}
