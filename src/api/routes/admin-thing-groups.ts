import { createRoute, z } from "@hono/zod-openapi";
import type { ThingGroupsService } from "../../things/index.js";
import type { RouteModule } from "../context.js";
import { emptyResponses, jsonBody, jsonResponses } from "../openapi.js";

const ThingGroupSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    domain: z.string(),
    things: z.array(z.string()).openapi({ description: "Members the caller may read (Things.READ)" }),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi("ThingGroup");

const GroupName = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[0-9A-Za-z_.:-]+$/, "0-9, A-Z, a-z, '_', '.', ':' or '-' only");
const ThingNames = z.array(z.string().min(1)).max(1000);
const IdParam = z.object({ id: z.string().min(1).openapi({ description: "Group id or name" }) });
const tags = ["admin: thing groups"];

const list = createRoute({
  method: "get",
  path: "/admin/thing-groups",
  tags,
  summary: "Thing groups in domains where the caller holds ThingGroups.READ",
  responses: jsonResponses(z.object({ thingGroups: z.array(ThingGroupSchema) })),
});
const get = createRoute({
  method: "get",
  path: "/admin/thing-groups/{id}",
  tags,
  request: { params: IdParam },
  responses: jsonResponses(ThingGroupSchema),
});
const create = createRoute({
  method: "post",
  path: "/admin/thing-groups",
  tags,
  summary: "Create a group; needs ThingGroups.CREATE on its domain and Things.READ on every thing in it",
  request: jsonBody(
    z.object({
      id: GroupName,
      name: GroupName.optional(),
      domain: z.string().min(1),
      things: ThingNames.default([]),
    }),
  ),
  responses: jsonResponses(ThingGroupSchema, "Created"),
});
const update = createRoute({
  method: "patch",
  path: "/admin/thing-groups/{id}",
  tags,
  summary:
    "Rename or move a group; moving needs ThingGroups.DELETE on the old domain and ThingGroups.CREATE on the new",
  request: {
    params: IdParam,
    ...jsonBody(z.object({ name: GroupName.optional(), domain: z.string().min(1).optional() })),
  },
  responses: jsonResponses(ThingGroupSchema),
});
const remove = createRoute({
  method: "delete",
  path: "/admin/thing-groups/{id}",
  tags,
  request: { params: IdParam },
  responses: emptyResponses(),
});
const addThings = createRoute({
  method: "post",
  path: "/admin/thing-groups/{id}/things",
  tags,
  summary: "Add things to a group; needs ThingGroups.UPDATE on the group's domain and Things.READ on each thing",
  request: { params: IdParam, ...jsonBody(z.object({ things: ThingNames.min(1) })) },
  responses: jsonResponses(ThingGroupSchema),
});
const removeThing = createRoute({
  method: "delete",
  path: "/admin/thing-groups/{id}/things/{thingName}",
  tags,
  summary: "Remove a thing from a group; needs ThingGroups.UPDATE on the group's domain",
  request: { params: IdParam.extend({ thingName: z.string().min(1) }) },
  responses: jsonResponses(ThingGroupSchema),
});

/** A thing the caller cannot read is, to it, one that does not exist (THING_NOT_FOUND, as in the interface). */
export const adminThingGroupRoutes: RouteModule<{ thingGroups: ThingGroupsService }> = (app, { thingGroups }) => {
  app.openapi(list, (c) => c.json({ thingGroups: thingGroups.list(c.get("principal")) }, 200));
  app.openapi(get, (c) => c.json(thingGroups.get(c.get("principal"), c.req.valid("param").id), 200));
  app.openapi(create, async (c) => c.json(await thingGroups.create(c.get("principal"), c.req.valid("json")), 200));
  app.openapi(update, async (c) =>
    c.json(await thingGroups.update(c.get("principal"), c.req.valid("param").id, c.req.valid("json")), 200),
  );
  app.openapi(remove, async (c) => {
    await thingGroups.delete(c.get("principal"), c.req.valid("param").id);
    return c.body(null, 200);
  });
  app.openapi(addThings, async (c) =>
    c.json(await thingGroups.addThings(c.get("principal"), c.req.valid("param").id, c.req.valid("json").things), 200),
  );
  app.openapi(removeThing, async (c) => {
    const { id, thingName } = c.req.valid("param");
    return c.json(await thingGroups.removeThing(c.get("principal"), id, thingName), 200);
  });
};
