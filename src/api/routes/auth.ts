import { createRoute, z } from "@hono/zod-openapi";
import { ApiError } from "../../errors/index.js";
import type { RouteModule, Services } from "../context.js";
import { jsonBody, jsonResponses } from "../openapi.js";

const LoginResponse = z
  .object({
    user: z.object({
      userName: z.string(),
      roleName: z.string(),
      domainName: z.string(),
      domainPath: z.string(),
    }),
    credentials: z.object({ token: z.string(), refreshToken: z.string(), expiresIn: z.number() }),
    permissions: z.record(z.string(), z.array(z.string())),
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

/** `family`: the refresh-token family an exchange continues; a login starts one. */
async function session(services: Services, userName: string, family?: string): Promise<z.infer<typeof LoginResponse>> {
  const user = services.identity.user(userName);
  if (!user) throw new ApiError("UNAUTHORIZED", "Unknown user");
  return {
    user: {
      userName: user.userName,
      roleName: user.role,
      domainName: user.homeDomain,
      domainPath: services.identity.pathOf(user.homeDomain) ?? user.homeDomain,
    },
    credentials: await services.tokens.issue(user.userName, family),
    permissions: user.privileges,
  };
}

export const authRoutes: RouteModule = (app, services) => {
  app.openapi(login, async (c) => {
    const { userName, password } = c.req.valid("json");
    const user = await services.identity.authenticate(userName, password);
    if (!user) throw new ApiError("UNAUTHORIZED", "Wrong user name or password");
    return c.json(await session(services, user.userName), 200);
  });

  app.openapi(refresh, async (c) => {
    // Each refresh token is good for one exchange; a reused one also revokes its family (src/auth/refresh.ts).
    const grant = await services.tokens.redeem(c.req.valid("json").refreshToken);
    if (!grant) throw new ApiError("UNAUTHORIZED", "Missing, expired, used or invalid refresh token");
    return c.json(await session(services, grant.userName, grant.family), 200);
  });
};
