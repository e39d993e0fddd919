import { createRoute, z } from "@hono/zod-openapi";
import {
  ACTIONS,
  RESOURCES,
  ROLES,
  requireReadWrite,
  type Identity,
  type Principal,
  type RoleName,
  type User,
} from "../../auth/index.js";
import { randomSecret } from "../../config/index.js";
import type { RouteModule } from "../context.js";
import { jsonBody, jsonResponses } from "../openapi.js";
import { Privileges } from "./admin-users.js";
import { authorizeGrants, authorizeUser, domainsOf, existingUser, requireDomains } from "./admin-support.js";

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

/**
 * What a MIC user created without explicit privileges holds on its domain:
 * every privilege the caller holds there (so nothing is escalated), reading
 * ones only for a Read user, as MIC derived permissions from the role.
 */
function inheritedGrants(principal: Principal, role: RoleName, domain: string): string[] {
  const actions = role === "Read" ? (["READ"] as const) : ACTIONS;
  return RESOURCES.flatMap((r) => actions.map((a) => `${r}.${a}` as const)).filter((p) => principal.can(p, domain));
}

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

export const userRoutes: RouteModule<{ identity: Identity }> = (app, { identity }) => {
  const existing = (userName: string): User => existingUser(identity, userName);

  app.openapi(get, (c) => {
    const user = existing(c.req.valid("param").userName);
    const principal = c.get("principal");
    if (user.userName !== principal.userName) authorizeUser(principal, "READ", domainsOf(user));
    return c.json(view(identity, user), 200);
  });

  app.openapi(whoami, (c) => c.json(view(identity, existing(c.get("principal").userName)), 200));

  app.openapi(create, async (c) => {
    const body = c.req.valid("json");
    const principal = c.get("principal");
    requireReadWrite(principal);
    const privileges = body.privileges ?? {
      [body.domainName]: inheritedGrants(principal, body.roleName, body.domainName),
    };
    requireDomains(identity, body.domainName, privileges, "domainName");
    authorizeUser(principal, "CREATE", domainsOf({ homeDomain: body.domainName, privileges }));
    authorizeGrants(principal, privileges);
    const user = await identity.createUser({
      userName: body.userName,
      // A user made without a password has an unguessable one nobody knows.
      password: body.password ?? randomSecret(),
      role: body.roleName,
      homeDomain: body.domainName,
      email: body.email,
      privileges,
    });
    return c.json(view(identity, user), 200);
  });
};
