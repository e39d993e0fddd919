import { createHmac, timingSafeEqual } from "node:crypto";

/** Signed URLs are valid this long (the interface's limit for file transfer URLs). */
export const SIGNED_URL_SECONDS = 15 * 60;

export interface SignedUrlCheck {
  ok: boolean;
  reason?: "expired" | "signature" | "malformed";
}

/**
 * HMAC-SHA256 over method, path and expiry. The key is derived from the service
 * secret with a purpose label, so a job-document signature can never be
 * replayed as a JWT or as a signature of another purpose.
 */
export class UrlSigner {
  private readonly key: Buffer;

  constructor(
    secret: string,
    private readonly publicUrl: string,
    private readonly clock: () => number,
    purpose = "job-documents",
  ) {
    this.key = createHmac("sha256", secret).update(`dms-signed-url:${purpose}`).digest();
  }

  /** An absolute URL for `method` on `path` (which starts with `/storage/`). */
  sign(method: string, path: string, seconds = SIGNED_URL_SECONDS): { url: string; expires: number } {
    const expires = Math.floor(this.clock() / 1000) + seconds;
    const signature = this.signature(method, path, expires);
    return { url: `${this.publicUrl}${path}?expires=${expires}&signature=${signature}`, expires };
  }

  verify(method: string, path: string, expires: string | undefined, signature: string | undefined): SignedUrlCheck {
    if (!expires || !/^\d{1,12}$/.test(expires) || !signature || !/^[0-9a-f]{64}$/.test(signature)) {
      return { ok: false, reason: "malformed" };
    }
    const expected = Buffer.from(this.signature(method, path, Number(expires)), "hex");
    if (!timingSafeEqual(expected, Buffer.from(signature, "hex"))) return { ok: false, reason: "signature" };
    if (Number(expires) * 1000 < this.clock()) return { ok: false, reason: "expired" };
    return { ok: true };
  }

  private signature(method: string, path: string, expires: number): string {
    return createHmac("sha256", this.key).update(`${method.toUpperCase()}\n${path}\n${expires}`).digest("hex");
  }
}
