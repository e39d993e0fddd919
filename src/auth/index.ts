export { Identity, type NewUser, type UserChange } from "./identity.js";
export {
  ROOT_DOMAIN,
  type Domain,
  type User,
  type ApiKeyInfo,
  type IdentityStore,
  type IdentityLoads,
  type RefreshTokenStore,
  type RefreshGrant,
  type UserRecord,
} from "./store.js";
export { SqliteIdentityStore } from "./sqlite-store.js";
export { PgIdentityStore } from "./pg-store.js";
export { authMigrations, identityPgMigrations } from "./migrations.js";
export { UsersService, type NewMicUser } from "./users.js";
export { DomainsService, ApiKeysService } from "./admin.js";
export { createAuth, type Auth, type AuthDeps } from "./create.js";
export {
  Principal,
  authorize,
  authorizeChange,
  requireReadWrite,
  isGrant,
  expandGrant,
  ACTIONS,
  RESOURCES,
  ROLES,
  type Action,
  type Resource,
  type Privilege,
  type RoleName,
  type DomainPaths,
} from "./privileges.js";
export { Tokens, jwtSecret, ACCESS_TOKEN_SECONDS, type Credentials } from "./tokens.js";
export { hashSecret, verifySecret, hashApiKey } from "./passwords.js";
export { identityIdOf } from "./identity-id.js";
export { authentication, type AuthEnv, type AuthenticationDeps } from "./middleware.js";
