export {
  Identity,
  ROOT_DOMAIN,
  type Domain,
  type User,
  type NewUser,
  type UserChange,
  type ApiKeyInfo,
} from "./identity.js";
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
export { authMigrations } from "./migrations.js";
export { identityIdOf } from "./identity-id.js";
export { authentication, type AuthEnv, type AuthenticationDeps } from "./middleware.js";
