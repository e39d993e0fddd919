import { createRoute, z } from "@hono/zod-openapi";
import {
  ACTIONS,
  RESOURCES,
  expandGrant,
  identityIdOf,
  type Action,
  type Identity,
  type RoleName,
  type Tokens,
} from "../../auth/index.js";
import type { Config } from "../../config/index.js";
import { ApiError } from "../../errors/index.js";
import type { RouteModule } from "../context.js";
import { jsonBody, jsonResponses } from "../openapi.js";

const LoginResponse = z
  .object({
    user: z.object({
      userName: z.string(),
      roleName: z.string(),
      domainName: z.string(),
      domainPath: z.string(),
      email: z.string().optional(),
    }),
    // identityId first: the MIC bash CLI cuts the token out of the answer's text and relies on it.
    credentials: z.object({
      identityId: z.string().openapi({ description: "Stable per user; MIC clients send it back as a header" }),
      token: z.string(),
      refreshToken: z.string(),
      expiresIn: z.number(),
    }),
    permissions: z.object({
      objects: z
        .record(z.string(), z.array(z.enum(ACTIONS)))
        .openapi({ description: "Per resource, the actions the user holds on at least one domain (as MIC gave them)" }),
      domains: z
        .record(z.string(), z.array(z.string()))
        .openapi({ description: "The grants exactly as held, per domain" }),
    }),
  })
  .openapi("LoginResponse");

const login = createRoute({
  method: "post",
  path: "/auth/login",
  tags: ["auth"],
  summary: "Log in with user name and password; needs the x-api-key",
  security: [{ apiKey: [] }],
  request: jsonBody(z.object({ userName: z.string().min(1), password: z.string().min(1) })),
  responses: jsonResponses(LoginResponse),
});

const refresh = createRoute({
  method: "post",
  path: "/auth/refresh",
  tags: ["auth"],
  summary: "Trade a refresh token for new credentials",
  security: [{ apiKey: [] }],
  request: jsonBody(z.object({ refreshToken: z.string().min(1) })),
  responses: jsonResponses(LoginResponse),
});

/** Per resource, the actions granted on some domain; a Read user holds READ only, whatever its grants. */
function objectPermissions(role: RoleName, privileges: Record<string, string[]>): Record<string, Action[]> {
  const held = new Set<string>(Object.values(privileges).flat().flatMap(expandGrant));
  const objects: Record<string, Action[]> = {};
  for (const resource of RESOURCES) {
    const actions = ACTIONS.filter((a) => held.has(`${resource}.${a}`) && (role === "ReadWrite" || a === "READ"));
    if (actions.length > 0) objects[resource] = actions;
  }
  return objects;
}

/** `family`: the refresh-token family an exchange continues; a login starts one. */
interface AuthDeps {
  identity: Identity;
  tokens: Tokens;
  config: Pick<Config, "DMS_STACK_NAME">;
}

async function session(services: AuthDeps, userName: string, family?: string): Promise<z.infer<typeof LoginResponse>> {
  const user = services.identity.user(userName);
  if (!user) throw new ApiError("UNAUTHORIZED", "Unknown user");
  const { token, refreshToken, expiresIn } = await services.tokens.issue(user.userName, family);
  return {
    user: {
      userName: user.userName,
      roleName: user.role,
      domainName: user.homeDomain,
      domainPath: services.identity.pathOf(user.homeDomain) ?? user.homeDomain,
      ...(user.email ? { email: user.email } : {}),
    },
    credentials: {
      identityId: identityIdOf(services.config.DMS_STACK_NAME, user.userName),
      token,
      refreshToken,
      expiresIn,
    },
    permissions: { objects: objectPermissions(user.role, user.privileges), domains: user.privileges },
  };
}

export const authRoutes: RouteModule<AuthDeps> = (app, services) => {
  app.openapi(login, async (c) => {
    const { userName, password } = c.req.valid("json");
    const user = await services.identity.authenticate(userName, password);
    if (!user) throw new ApiError("INVALID_LOGIN", "Wrong user name or password");
    return c.json(await session(services, user.userName), 200);
  });

  app.openapi(refresh, async (c) => {
    // Each refresh token is good for one exchange; a reused one also revokes its family (src/auth/refresh.ts).
    const grant = await services.tokens.redeem(c.req.valid("json").refreshToken);
    if (!grant) throw new ApiError("UNAUTHORIZED", "Missing, expired, used or invalid refresh token");
    return c.json(await session(services, grant.userName, grant.family), 200);
  });
};
