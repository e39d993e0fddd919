import { createRoute, z } from "@hono/zod-openapi";
import { ROLES, isGrant, requireReadWrite, type User, type Identity } from "../../auth/index.js";
import type { RouteModule } from "../context.js";
import { emptyResponses, jsonBody, jsonResponses } from "../openapi.js";
import { authorizeGrants, authorizeUser, domainsOf, existingUser, requireDomains } from "./admin-support.js";

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

export const adminUserRoutes: RouteModule<{ identity: Identity }> = (app, { identity }) => {
  const existing = (userName: string): User => existingUser(identity, userName);

  app.openapi(list, (c) => {
    const principal = c.get("principal");
    const users = identity.users().filter((u) => domainsOf(u).every((d) => principal.can("Users.READ", d)));
    return c.json({ users }, 200);
  });

  app.openapi(get, (c) => {
    const user = existing(c.req.valid("param").userName);
    authorizeUser(c.get("principal"), "READ", domainsOf(user));
    return c.json(user, 200);
  });

  app.openapi(create, async (c) => {
    const body = c.req.valid("json");
    const principal = c.get("principal");
    requireReadWrite(principal);
    const privileges = body.privileges ?? {};
    requireDomains(identity, body.homeDomain, privileges);
    authorizeUser(principal, "CREATE", domainsOf({ homeDomain: body.homeDomain, privileges }));
    authorizeGrants(principal, privileges);
    return c.json(await identity.createUser({ ...body, privileges }), 200);
  });

  app.openapi(update, async (c) => {
    const user = existing(c.req.valid("param").userName);
    const body = c.req.valid("json");
    const principal = c.get("principal");
    requireReadWrite(principal);
    const next = { homeDomain: body.homeDomain ?? user.homeDomain, privileges: body.privileges ?? user.privileges };
    requireDomains(identity, next.homeDomain, next.privileges);
    authorizeUser(principal, "UPDATE", [...new Set([...domainsOf(user), ...domainsOf(next)])]);
    // Raising Read to ReadWrite turns every grant into a writing one: all of them count as new.
    const raised = body.role === "ReadWrite" && user.role === "Read";
    authorizeGrants(principal, next.privileges, raised ? {} : user.privileges);
    return c.json(await identity.updateUser(user.userName, body), 200);
  });

  app.openapi(remove, (c) => {
    const user = existing(c.req.valid("param").userName);
    const principal = c.get("principal");
    requireReadWrite(principal);
    authorizeUser(principal, "DELETE", domainsOf(user));
    identity.deleteUser(user.userName);
    return c.body(null, 200);
  });
};
