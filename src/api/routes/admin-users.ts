import { createRoute, z } from "@hono/zod-openapi";
import { ROLES, isGrant, type UsersService } from "../../auth/index.js";
import type { RouteModule } from "../context.js";
import { emptyResponses, jsonBody, jsonResponses } from "../openapi.js";

export const Privileges = z.record(
  z.string().min(1),
  z.array(z.string().refine(isGrant, "expected <Resource>.<ACTION>, <Resource>.* or *.*")),
);

const UserSchema = z
  .object({
    userName: z.string(),
    role: z.enum(ROLES),
    homeDomain: z.string(),
    email: z.string().nullable(),
    privileges: z.record(z.string(), z.array(z.string())),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi("User");

const Password = z.string().min(8).max(256);
const Email = z.email().max(256);
const NameParam = z.object({ userName: z.string().min(1) });
const tags = ["admin: users"];

const list = createRoute({
  method: "get",
  path: "/admin/users",
  tags,
  summary: "Users whose home domain and privilege domains all grant the caller Users.READ",
  responses: jsonResponses(z.object({ users: z.array(UserSchema) })),
});
const get = createRoute({
  method: "get",
  path: "/admin/users/{userName}",
  tags,
  request: { params: NameParam },
  responses: jsonResponses(UserSchema),
});
const create = createRoute({
  method: "post",
  path: "/admin/users",
  tags,
  summary: "Create a user; the caller may only grant privileges it holds itself",
  request: jsonBody(
    z.object({
      userName: z
        .string()
        .min(1)
        .max(64)
        .regex(/^[0-9A-Za-z_-]+$/, "0-9, A-Z, a-z, '_' or '-' only"),
      password: Password,
      role: z.enum(ROLES),
      homeDomain: z.string().min(1),
      email: Email.optional(),
      privileges: Privileges.optional(),
    }),
  ),
  responses: jsonResponses(UserSchema, "Created"),
});
const update = createRoute({
  method: "patch",
  path: "/admin/users/{userName}",
  tags,
  summary: "Change password, role, home domain, e-mail or privileges (privileges are replaced as a whole)",
  request: {
    params: NameParam,
    ...jsonBody(
      z.object({
        password: Password.optional(),
        role: z.enum(ROLES).optional(),
        homeDomain: z.string().min(1).optional(),
        email: Email.nullable().optional(),
        privileges: Privileges.optional(),
      }),
    ),
  },
  responses: jsonResponses(UserSchema),
});
const remove = createRoute({
  method: "delete",
  path: "/admin/users/{userName}",
  tags,
  request: { params: NameParam },
  responses: emptyResponses(),
});

/** The checks are the service's (`UsersService`): this module maps HTTP onto it. */
export const adminUserRoutes: RouteModule<{ users: UsersService }> = (app, { users }) => {
  app.openapi(list, async (c) => c.json({ users: await users.list(c.get("principal")) }, 200));

  app.openapi(get, (c) => c.json(users.get(c.get("principal"), c.req.valid("param").userName), 200));

  app.openapi(create, async (c) => c.json(await users.create(c.get("principal"), c.req.valid("json")), 200));

  app.openapi(update, async (c) =>
    c.json(await users.update(c.get("principal"), c.req.valid("param").userName, c.req.valid("json")), 200),
  );

  app.openapi(remove, async (c) => {
    await users.delete(c.get("principal"), c.req.valid("param").userName);
    return c.body(null, 200);
  });
};
