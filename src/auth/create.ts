import type { MiddlewareHandler } from "hono";
import type { EventBus } from "../bus/index.js";
import { ApiKeysService, DomainsService } from "./admin.js";
import { Identity } from "./identity.js";
import { authentication, type AuthEnv } from "./middleware.js";
import type { IdentityStore } from "./store.js";
import { Tokens } from "./tokens.js";
import { UsersService } from "./users.js";

export interface AuthDeps {
  /** Where domains, users, API keys and refresh tokens are kept. */
  store: IdentityStore;
  /** Where domain and API key changes are announced, and heard from other processes. */
  bus: EventBus;
  /** Judges token expiry; tests move it. */
  clock: () => number;
  /** Signs the access and refresh tokens (`jwtSecret`). */
  tokenSecret: string;
}

/** The identity capability: who may call (keys, tokens, users) and the operations on domains, users and keys. */
export interface Auth {
  store: IdentityStore;
  identity: Identity;
  tokens: Tokens;
  users: UsersService;
  domains: DomainsService;
  apiKeys: ApiKeysService;
  /** The middleware REST and the proxy control interface authenticate with. */
  authentication: MiddlewareHandler<AuthEnv>;
}

/** Loads the identity into memory, so that requests authenticate without a round trip to the store. */
export async function createAuth({ store, bus, clock, tokenSecret }: AuthDeps): Promise<Auth> {
  const identity = await Identity.open(store, bus);
  const tokens = new Tokens(tokenSecret, clock, store);
  return {
    store,
    identity,
    tokens,
    users: new UsersService(identity),
    domains: new DomainsService(identity),
    apiKeys: new ApiKeysService(identity),
    authentication: authentication({ identity, tokens }),
  };
}
