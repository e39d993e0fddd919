import type { MiddlewareHandler } from "hono";
import { ApiError } from "../errors/index.js";
import type { Identity } from "./identity.js";
import type { Principal } from "./privileges.js";
import type { Tokens } from "./tokens.js";

/** What the authentication sets on a request: REST and the proxy control interface read it. */
export interface AuthEnv {
  Variables: { principal: Principal };
}

/**
 * Paths that need neither key nor token: probes, the API description, the console's static files,
 * signed-URL transfers, and the two manifests a MIC client reads before it has a key.
 */
const OPEN = [
  /^\/healthz$/,
  /^\/readyz$/,
  /^\/metrics$/,
  /^\/openapi\.json$/,
  /^\/docs(\/.*)?$/,
  /^\/console(\/.*)?$/,
  /^\/storage\//,
  /^\/manifest$/,
  /^\/metadata\/manifest$/,
];
/** Paths that need the API key but no token. */
const KEY_ONLY = [/^\/auth\/(login|refresh)$/];

export interface AuthenticationDeps {
  identity: Pick<Identity, "isApiKey" | "principal">;
  tokens: Pick<Tokens, "verify">;
}

/**
 * `x-api-key` must be a provisioned key (403 `{"message":"Forbidden"}` as the
 * original gateway answered), then `Authorization: [Bearer ]<token>` must be a
 * valid access token of an existing user (401). REST and the proxy control
 * interface use the same one, built once by the wiring.
 */
export function authentication({ identity, tokens }: AuthenticationDeps): MiddlewareHandler<AuthEnv> {
  return async (c, next) => {
    const path = c.req.path;
    if (OPEN.some((p) => p.test(path))) return next();
    const key = c.req.header("x-api-key");
    if (!key || !identity.isApiKey(key)) return c.json({ message: "Forbidden" }, 403);
    if (KEY_ONLY.some((p) => p.test(path))) return next();
    const token = bearer(c.req.header("authorization"));
    const userName = token && (await tokens.verify(token, "access"));
    const principal = userName ? identity.principal(userName) : undefined;
    if (!principal) throw new ApiError("UNAUTHORIZED", "Missing, expired or invalid token");
    c.set("principal", principal);
    return next();
  };
}

export function bearer(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const token = header.startsWith("Bearer ") ? header.slice(7) : header;
  return token.trim() || undefined;
}
