import { createRoute, z } from "@hono/zod-openapi";
import { authorize, authorizeChange, requireReadWrite, type Identity } from "../../auth/index.js";
import { notFound } from "../../errors/index.js";
import { DATA_TYPES, RESOURCE_TYPES, type ThingType, type ThingRegistry } from "../../things/index.js";
import type { RouteModule } from "../context.js";
import { emptyResponses, jsonBody, jsonResponses } from "../openapi.js";
import { requireDomain } from "./admin-support.js";

const ResourceSchema = z
  .object({
    name: z
      .string()
      .min(1)
      .max(128)
      .regex(/^[0-9A-Za-z_.-]+$/, "0-9, A-Z, a-z, '_', '.' or '-' only"),
    dataType: z.enum(DATA_TYPES),
    resourceType: z.enum(RESOURCE_TYPES).default("thing"),
  })
  .openapi("ResourceDefinition");

export const ThingTypeSchema = z
  .object({
    id: z.string(),
    label: z.string(),
    domain: z.string(),
    resources: z.array(ResourceSchema),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi("ThingType");

const Resources = z.array(ResourceSchema).max(1000);
const IdParam = z.object({ id: z.string().min(1) });
const tags = ["admin: thing types"];

const list = createRoute({
  method: "get",
  path: "/admin/thing-types",
  tags,
  summary: "Thing types in domains where the caller holds ThingTypes.READ",
  request: { query: z.object({ domain: z.string().min(1).optional() }) },
  responses: jsonResponses(z.object({ thingTypes: z.array(ThingTypeSchema) })),
});
const get = createRoute({
  method: "get",
  path: "/admin/thing-types/{id}",
  tags,
  request: { params: IdParam },
  responses: jsonResponses(ThingTypeSchema),
});
const create = createRoute({
  method: "post",
  path: "/admin/thing-types",
  tags,
  summary: "Create a thing type with its resources; needs ThingTypes.CREATE on its domain",
  request: jsonBody(
    z.object({
      id: z
        .string()
        .min(1)
        .max(128)
        .regex(/^[0-9A-Za-z_.:-]+$/, "0-9, A-Z, a-z, '_', '.', ':' or '-' only"),
      label: z.string().min(1).max(256).optional(),
      domain: z.string().min(1),
      resources: Resources.default([]),
    }),
  ),
  responses: jsonResponses(ThingTypeSchema, "Created"),
});
const update = createRoute({
  method: "patch",
  path: "/admin/thing-types/{id}",
  tags,
  summary:
    "Change label, domain or resources (replaced as a whole); moving needs ThingTypes.DELETE on the old domain and ThingTypes.CREATE on the new",
  request: {
    params: IdParam,
    ...jsonBody(
      z.object({
        label: z.string().min(1).max(256).optional(),
        domain: z.string().min(1).optional(),
        resources: Resources.optional(),
      }),
    ),
  },
  responses: jsonResponses(ThingTypeSchema),
});
const remove = createRoute({
  method: "delete",
  path: "/admin/thing-types/{id}",
  tags,
  summary: "Delete a thing type that no thing uses",
  request: { params: IdParam },
  responses: emptyResponses(),
});

export const adminThingTypeRoutes: RouteModule<{ identity: Identity; registry: ThingRegistry }> = (
  app,
  { identity, registry },
) => {
  const existing = (id: string): ThingType => {
    const thingType = registry.thingType(id);
    if (!thingType) throw notFound("THING_TYPE_NOT_FOUND", `Thing type ${id}`, "id");
    return thingType;
  };

  app.openapi(list, (c) => {
    const principal = c.get("principal");
    const { domain } = c.req.valid("query");
    const thingTypes = registry
      .thingTypes()
      .filter((t) => (domain === undefined || t.domain === domain) && principal.can("ThingTypes.READ", t.domain));
    return c.json({ thingTypes }, 200);
  });

  app.openapi(get, (c) => {
    const thingType = existing(c.req.valid("param").id);
    authorize(c.get("principal"), "ThingTypes.READ", thingType.domain);
    return c.json(thingType, 200);
  });

  app.openapi(create, async (c) => {
    const body = c.req.valid("json");
    const principal = c.get("principal");
    requireReadWrite(principal);
    requireDomain(identity, body.domain);
    authorize(principal, "ThingTypes.CREATE", body.domain);
    return c.json(await registry.putThingType({ ...body, label: body.label ?? body.id }, "create"), 200);
  });

  app.openapi(update, async (c) => {
    const current = existing(c.req.valid("param").id);
    const body = c.req.valid("json");
    const principal = c.get("principal");
    requireReadWrite(principal);
    const domain = body.domain ?? current.domain;
    requireDomain(identity, domain);
    authorizeChange(principal, "ThingTypes", current.domain, domain);
    const next = {
      id: current.id,
      label: body.label ?? current.label,
      domain,
      resources: body.resources ?? current.resources,
    };
    return c.json(await registry.putThingType(next, "update"), 200);
  });

  app.openapi(remove, async (c) => {
    const thingType = existing(c.req.valid("param").id);
    const principal = c.get("principal");
    requireReadWrite(principal);
    authorize(principal, "ThingTypes.DELETE", thingType.domain);
    await registry.deleteThingType(thingType.id);
    return c.body(null, 200);
  });
};
