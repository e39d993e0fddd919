import { createHmac, hkdfSync, timingSafeEqual } from "node:crypto";
import { ApiError } from "../errors/index.js";
import type { KeyStore } from "../keys/index.js";

/** Validity of the file download and upload URLs (INTERFACE.md, Limits). */
export const SIGNED_URL_SECONDS = 15 * 60;

/** Query parameters the signer owns; every other parameter of a signed URL is signed as well. */
export const PARAM = {
  expires: "X-Dms-Expires",
  signedHeaders: "X-Dms-SignedHeaders",
  signature: "X-Dms-Signature",
} as const;
const OWN_PARAMS = new Set<string>(Object.values(PARAM));

export interface SignRequest {
  /** The method the URL may be used with: a GET URL does not work for PUT. */
  method: string;
  /** The URL path exactly as it will be requested (percent-encoded), under `/storage/`. */
  path: string;
  /** Epoch milliseconds after which the URL is refused. */
  expiresAt: number;
  /** Headers the request must carry with exactly these values. */
  headers?: Readonly<Record<string, string>>;
  /** Further query parameters, signed so they cannot be changed. */
  query?: Readonly<Record<string, string>>;
}

/** What a signed request looks like to the verifier; `header` answers undefined for an absent header. */
export interface SignedRequest {
  method: string;
  /** The raw (still percent-encoded) path of the request. */
  path: string;
  query: URLSearchParams;
  header(name: string): string | undefined;
}

export type Verdict = { ok: true; expiresAt: number; signedHeaders: string[] } | { ok: false; reason: string };

export interface SignerOptions {
  key: Buffer;
  /** Origin written into URLs, such as `http://localhost:8080` (DMS_PUBLIC_URL); a function when known only later. */
  baseUrl: string | (() => string);
  clock?: () => number;
}

/**
 * Signed URLs served by dms itself: an HMAC-SHA256 over method, path, expiry,
 * the bound headers (names in the URL, values from the request) and any other
 * query parameter. Like S3's query-string signing, the URL alone is the
 * credential, so a change to any signed part, another method, or a missing or
 * different bound header is refused.
 */
export class UrlSigner {
  private readonly key: Buffer;
  private readonly baseUrl: () => string;
  private readonly clock: () => number;

  constructor(options: SignerOptions) {
    this.key = options.key;
    const base = options.baseUrl;
    this.baseUrl = typeof base === "string" ? () => base.replace(/\/$/, "") : () => base().replace(/\/$/, "");
    this.clock = options.clock ?? Date.now;
  }

  /** The absolute URL for `request`. */
  sign(request: SignRequest): string {
    if (!request.path.startsWith("/storage/")) throw new Error(`signed paths live under /storage/: ${request.path}`);
    const expires = Math.floor(request.expiresAt / 1000);
    const headers = normalizeHeaders(request.headers ?? {});
    const names = Object.keys(headers).sort();
    const query = new URLSearchParams(request.query ?? {});
    for (const name of OWN_PARAMS) query.delete(name);
    const signature = this.signature(request.method, request.path, expires, names, (n) => headers[n], query);
    query.set(PARAM.expires, String(expires));
    if (names.length > 0) query.set(PARAM.signedHeaders, names.join(";"));
    query.set(PARAM.signature, signature);
    return `${this.baseUrl()}${request.path}?${query.toString()}`;
  }

  /** The URL valid for the standard 15 minutes from now. */
  signFor(request: Omit<SignRequest, "expiresAt">, seconds = SIGNED_URL_SECONDS): string {
    return this.sign({ ...request, expiresAt: this.clock() + seconds * 1000 });
  }

  verify(request: SignedRequest): Verdict {
    const { query } = request;
    const signature = query.get(PARAM.signature);
    const expiresText = query.get(PARAM.expires);
    if (!signature || !expiresText) return { ok: false, reason: "The URL is not signed" };
    if (!/^\d{1,12}$/.test(expiresText)) return { ok: false, reason: `Bad ${PARAM.expires}` };
    const names = (query.get(PARAM.signedHeaders) ?? "").split(";").filter((n) => n !== "");
    const missing = names.filter((n) => request.header(n) === undefined);
    const rest = new URLSearchParams([...query].filter(([k]) => !OWN_PARAMS.has(k)));
    const expected = this.signature(request.method, request.path, Number(expiresText), names, request.header, rest);
    if (!sameText(expected, signature)) {
      if (missing.length > 0) {
        return { ok: false, reason: `The request must carry the signed header(s) ${missing.join(", ")}` };
      }
      const bound = names.length > 0 ? ` or the values of the signed headers (${names.join(", ")})` : "";
      return {
        ok: false,
        reason: `The signature does not match: the URL was changed, or it is used with another method${bound}`,
      };
    }
    const expiresAt = Number(expiresText) * 1000;
    if (expiresAt <= this.clock()) {
      return { ok: false, reason: `The URL expired at ${new Date(expiresAt).toISOString()}` };
    }
    return { ok: true, expiresAt, signedHeaders: names };
  }

  /** Verifies a fetch `Request` (what Hono's `c.req.raw` is). */
  verifyRequest(request: Request): Verdict {
    const url = new URL(request.url);
    return this.verify({
      method: request.method,
      path: url.pathname,
      query: url.searchParams,
      header: (name) => request.headers.get(name) ?? undefined,
    });
  }

  /** Throws 403 FORBIDDEN with the reason unless `request` carries a valid signature. */
  assertSigned(request: Request): Extract<Verdict, { ok: true }> {
    const verdict = this.verifyRequest(request);
    if (!verdict.ok) throw new ApiError("FORBIDDEN", verdict.reason);
    return verdict;
  }

  private signature(
    method: string,
    path: string,
    expires: number,
    headerNames: readonly string[],
    header: (name: string) => string | undefined,
    query: URLSearchParams,
  ): string {
    const sortedQuery = [...query].sort(([a, av], [b, bv]) => (a === b ? cmp(av, bv) : cmp(a, b)));
    const lines = [
      "DMS-HMAC-SHA256",
      method.toUpperCase(),
      path,
      String(expires),
      headerNames.join(";"),
      ...headerNames.map((n) => `${n}:${(header(n) ?? "").trim()}`),
      new URLSearchParams(sortedQuery).toString(),
    ];
    return createHmac("sha256", this.key).update(lines.join("\n")).digest("base64url");
  }
}

function normalizeHeaders(headers: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) out[name.toLowerCase()] = value.trim();
  return out;
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * The signing key: derived from DMS_JWT_SECRET when set (so every process of a deployment agrees
 * without another secret), else generated once and kept in the key store.
 */
export async function signingKey(configured: string | undefined, keys: KeyStore): Promise<Buffer> {
  if (configured) return Buffer.from(hkdfSync("sha256", configured, "dms", "signed-urls", 32));
  return Buffer.from(await keys.key("signing-key"), "base64url");
}

/** A path under `/storage/` from unencoded segments, each percent-encoded. */
export function storagePath(...segments: string[]): string {
  return `/storage/${segments.map(encodeURIComponent).join("/")}`;
}
