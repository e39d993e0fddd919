import { createHmac, timingSafeEqual } from "node:crypto";

/** Signed URLs are valid 15 minutes (interface limit). */
export const SIGNED_URL_SECONDS = 15 * 60;

/**
 * HMAC-SHA256 over method, path and expiry, as DESIGN.md describes the
 * service's signed URLs; a URL for another method or path does not verify.
 */
export class UrlSigner {
  private readonly key: Buffer;

  constructor(secret: string) {
    this.key = createHmac("sha256", "dms-export-urls").update(secret).digest();
  }

  sign(method: string, path: string, nowMs: number): string {
    const expires = Math.floor(nowMs / 1000) + SIGNED_URL_SECONDS;
    return `${path}?expires=${expires}&signature=${this.mac(method, path, expires)}`;
  }

  verify(
    method: string,
    path: string,
    expires: string | undefined,
    signature: string | undefined,
    nowMs: number,
  ): boolean {
    if (!expires || !signature || !/^\d+$/.test(expires)) return false;
    if (Number(expires) * 1000 < nowMs) return false;
    const expected = Buffer.from(this.mac(method, path, Number(expires)), "hex");
    const given = Buffer.from(signature, "hex");
    return given.length === expected.length && timingSafeEqual(given, expected);
  }

  private mac(method: string, path: string, expires: number): string {
    return createHmac("sha256", this.key).update(`${method}\n${path}\n${expires}`).digest("hex");
  }
}
