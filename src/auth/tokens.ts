import { createHmac, timingSafeEqual } from "node:crypto";
import { randomSecret } from "../config/index.js";
import type { KeyStore } from "../keys/index.js";
import type { RefreshGrant, RefreshTokenStore } from "./store.js";

export const ACCESS_TOKEN_SECONDS = 60 * 60;
export const REFRESH_TOKEN_SECONDS = 7 * 24 * 60 * 60;

type TokenKind = "access" | "refresh";

export interface Credentials {
  token: string;
  refreshToken: string;
  expiresIn: number;
}

/**
 * Signs and checks the HS256 JWTs of login and refresh. Refresh tokens rotate: each is good for
 * one exchange. Every token issued is kept in the store (its `jti`), in a family that starts at
 * login; an exchange uses it up and the next token joins the same family. A token presented
 * again after it was used means it leaked (or a client raced itself): the whole family is
 * revoked, so the newest token of that login stops working too. Kept in the store, this holds
 * across restarts and across processes on one database.
 */
export class Tokens {
  /**
   * @param refresh where refresh tokens are kept; without one (benches, tests minting access
   *   tokens) no refresh token is ever redeemed.
   */
  constructor(
    private readonly secret: string,
    private readonly clock: () => number = Date.now,
    private readonly refresh?: RefreshTokenStore,
  ) {}

  /**
   * New credentials for `userName`. Without `family` (a login) the refresh
   * token starts a family; an exchange passes the family of the token it used up.
   */
  async issue(userName: string, family: string = randomSecret()): Promise<Credentials> {
    const jti = randomSecret();
    const refreshToken = await this.sign(userName, "refresh", REFRESH_TOKEN_SECONDS, jti);
    const now = this.clock();
    await this.refresh?.issueRefresh(jti, family, userName, now + REFRESH_TOKEN_SECONDS * 1000, now);
    return {
      token: await this.sign(userName, "access", ACCESS_TOKEN_SECONDS),
      refreshToken,
      expiresIn: ACCESS_TOKEN_SECONDS,
    };
  }

  /**
   * Uses a refresh token up: its user and family, or undefined for a bad,
   * expired, revoked or already used one (a reuse also revokes its family).
   */
  async redeem(refreshToken: string): Promise<RefreshGrant | undefined> {
    const payload = this.payload(refreshToken, "refresh");
    if (!payload || typeof payload.jti !== "string") return undefined;
    return this.refresh?.redeemRefresh(payload.jti, payload.sub as string, this.clock());
  }

  /**
   * The user name of a valid token of that kind, or undefined for a bad,
   * expired or tampered one. Expiry is judged by the injected clock, the same
   * one that issued the token, so tests that move time see consistent tokens.
   */
  async verify(token: string, kind: TokenKind): Promise<string | undefined> {
    return this.payload(token, kind)?.sub as string | undefined;
  }

  private payload(token: string, kind: TokenKind): Record<string, unknown> | undefined {
    const parts = token.split(".");
    if (parts.length !== 3) return undefined;
    const [header, body, signature] = parts as [string, string, string];
    const expected = Buffer.from(this.hmac(`${header}.${body}`), "base64url");
    const given = Buffer.from(signature, "base64url");
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) return undefined;
    const payload = parseJson(body);
    if (!payload || parseJson(header)?.alg !== "HS256") return undefined;
    const now = Math.floor(this.clock() / 1000);
    if (payload.typ !== kind || typeof payload.sub !== "string") return undefined;
    if (typeof payload.exp !== "number" || payload.exp <= now) return undefined;
    return payload;
  }

  private async sign(sub: string, typ: TokenKind, seconds: number, jti = randomSecret()): Promise<string> {
    const iat = Math.floor(this.clock() / 1000);
    // jti makes two tokens issued in the same second differ; a refresh token's names its row in refresh_tokens.
    const payload = { sub, typ, iat, exp: iat + seconds, jti };
    const head = `${base64url({ alg: "HS256", typ: "JWT" })}.${base64url(payload)}`;
    return `${head}.${this.hmac(head)}`;
  }

  private hmac(data: string): string {
    return createHmac("sha256", this.secret).update(data).digest("base64url");
  }
}

function base64url(value: object): string {
  return Buffer.from(JSON.stringify(value)).toString("base64url");
}

function parseJson(part: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(part, "base64url").toString("utf8"));
    return value !== null && typeof value === "object" ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** DMS_JWT_SECRET, or one generated once and kept in the key store, so that tokens survive a restart and hold on every node. */
export async function jwtSecret(configured: string | undefined, keys: KeyStore): Promise<string> {
  return configured || (await keys.key("jwt-secret"));
}
