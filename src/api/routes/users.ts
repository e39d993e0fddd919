import { createRoute, z } from "@hono/zod-openapi";
import { ROLES, type Identity, type User, type UsersService } from "../../auth/index.js";
import type { RouteModule } from "../context.js";
import { jsonBody, jsonResponses } from "../openapi.js";
import { Privileges } from "./admin-users.js";

/**
 * The User API of MIC as its clients call it (GET /users/{userName}, GET /user,
 * POST /users), mapped onto dms users: MIC's `roleName` and `domainName` are
 * dms's role and home domain. The admin API (/admin/users) stays the full one.
 */
const MicUserSchema = z
  .object({
    userName: z.string(),
    roleName: z.enum(ROLES),
    domainName: z.string(),
    domainPath: z.string(),
    email: z.string().optional(),
    privileges: z.record(z.string(), z.array(z.string())),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi("MicUser");

const tags = ["users (MIC)"];

const get = createRoute({
  method: "get",
  path: "/users/{userName}",
  tags,
  summary: "A user: the caller itself, or one whose domains all grant the caller Users.READ",
  request: {
    params: z.object({ userName: z.string().min(1) }),
    // MIC clients ask for attributes; dms answers all it has whatever they name.
    query: z.object({ attributes: z.string().max(2048).optional() }),
  },
  responses: jsonResponses(MicUserSchema),
});

const whoami = createRoute({
  method: "get",
  path: "/user",
  tags,
  summary: "The caller",
  request: { query: z.object({ attributes: z.string().max(2048).optional() }) },
  responses: jsonResponses(MicUserSchema),
});

const create = createRoute({
  method: "post",
  path: "/users",
  tags,
  summary: "Create a user in domainName; without privileges it gets, there, those of the caller's that its role allows",
  request: jsonBody(
    z.object({
      userName: z
        .string()
        .min(1)
        .max(64)
        .regex(/^[0-9A-Za-z_-]+$/, "0-9, A-Z, a-z, '_' or '-' only"),
      roleName: z.enum(ROLES),
      domainName: z.string().min(1),
      email: z.email().max(256).optional(),
      password: z
        .string()
        .min(8)
        .max(256)
        .optional()
        .openapi({ description: "dms addition: without it the user cannot log in until an admin sets one" }),
      privileges: Privileges.optional(),
    }),
  ),
  responses: jsonResponses(MicUserSchema),
});

function view(identity: Identity, user: User): z.infer<typeof MicUserSchema> {
  return {
    userName: user.userName,
    roleName: user.role,
    domainName: user.homeDomain,
    domainPath: identity.pathOf(user.homeDomain) ?? user.homeDomain,
    ...(user.email ? { email: user.email } : {}),
    privileges: user.privileges,
    createdAt: user.createdAt,
    updatedAt: user.updatedAt,
  };
}

/** The checks are the service's (`UsersService`): this module maps MIC's names onto it. */
export const userRoutes: RouteModule<{ identity: Identity; users: UsersService }> = (app, { identity, users }) => {
  app.openapi(get, (c) =>
    c.json(view(identity, users.getForMic(c.get("principal"), c.req.valid("param").userName)), 200),
  );

  app.openapi(whoami, (c) => {
    const principal = c.get("principal");
    return c.json(view(identity, users.getForMic(principal, principal.userName)), 200);
  });

  app.openapi(create, async (c) => {
    const body = c.req.valid("json");
    const user = await users.createForMic(c.get("principal"), {
      userName: body.userName,
      password: body.password,
      role: body.roleName,
      homeDomain: body.domainName,
      email: body.email,
      privileges: body.privileges,
    });
    return c.json(view(identity, user), 200);
  });
};
