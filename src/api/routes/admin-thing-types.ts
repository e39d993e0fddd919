import { createRoute, z } from "@hono/zod-openapi";
import { DATA_TYPES, RESOURCE_TYPES, type ThingTypesService } from "../../things/index.js";
import type { RouteModule } from "../context.js";
import { emptyResponses, jsonBody, jsonResponses } from "../openapi.js";

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

/** The checks are the service's (`ThingTypesService`): this module maps HTTP onto it. */
export const adminThingTypeRoutes: RouteModule<{ thingTypes: ThingTypesService }> = (app, { thingTypes }) => {
  app.openapi(list, (c) =>
    c.json({ thingTypes: thingTypes.list(c.get("principal"), c.req.valid("query").domain) }, 200),
  );

  app.openapi(get, (c) => c.json(thingTypes.get(c.get("principal"), c.req.valid("param").id), 200));

  app.openapi(create, async (c) => c.json(await thingTypes.create(c.get("principal"), c.req.valid("json")), 200));

  app.openapi(update, async (c) =>
    c.json(await thingTypes.update(c.get("principal"), c.req.valid("param").id, c.req.valid("json")), 200),
  );

  app.openapi(remove, async (c) => {
    await thingTypes.delete(c.get("principal"), c.req.valid("param").id);
    return c.body(null, 200);
  });
};
