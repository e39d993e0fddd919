import { createRoute, z } from "@hono/zod-openapi";
import { authorize, requireReadWrite, type Principal, type Identity } from "../../auth/index.js";
import { notFound } from "../../errors/index.js";
import type { ThingGroup, ThingRegistry } from "../../things/index.js";
import type { RouteModule } from "../context.js";
import { emptyResponses, jsonBody, jsonResponses } from "../openapi.js";
import { authorizeChange, requireDomain } from "./admin-support.js";

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
function requireReadableThings(registry: ThingRegistry, principal: Principal, thingNames: string[]): void {
  for (const thingName of thingNames) {
    const thing = registry.thing(thingName);
    if (!thing || !principal.can("Things.READ", thing.domain)) {
      throw notFound("THING_NOT_FOUND", `Thing ${thingName}`, "things");
    }
  }
}

export const adminThingGroupRoutes: RouteModule<{ identity: Identity; registry: ThingRegistry }> = (
  app,
  { identity, registry },
) => {
  const existing = (idOrName: string): ThingGroup => {
    const group = registry.group(idOrName);
    if (!group) throw notFound("THING_GROUP_NOT_FOUND", `Thing group ${idOrName}`, "id");
    return group;
  };
  /** The group as the caller may see it: members it cannot read are left out. */
  const view = (principal: Principal, group: ThingGroup): ThingGroup => ({
    ...group,
    things: group.things.filter((t) => {
      const thing = registry.thing(t);
      return thing !== undefined && principal.can("Things.READ", thing.domain);
    }),
  });

  app.openapi(list, (c) => {
    const principal = c.get("principal");
    const thingGroups = registry
      .groups()
      .filter((g) => principal.can("ThingGroups.READ", g.domain))
      .map((g) => view(principal, g));
    return c.json({ thingGroups }, 200);
  });

  app.openapi(get, (c) => {
    const group = existing(c.req.valid("param").id);
    const principal = c.get("principal");
    authorize(principal, "ThingGroups.READ", group.domain);
    return c.json(view(principal, group), 200);
  });

  app.openapi(create, async (c) => {
    const body = c.req.valid("json");
    const principal = c.get("principal");
    requireReadWrite(principal);
    requireDomain(identity, body.domain);
    authorize(principal, "ThingGroups.CREATE", body.domain);
    requireReadableThings(registry, principal, body.things);
    const group = await registry.putGroup({ ...body, name: body.name ?? body.id }, "create");
    return c.json(view(principal, group), 200);
  });

  app.openapi(update, async (c) => {
    const current = existing(c.req.valid("param").id);
    const body = c.req.valid("json");
    const principal = c.get("principal");
    requireReadWrite(principal);
    const domain = body.domain ?? current.domain;
    requireDomain(identity, domain);
    authorizeChange(principal, "ThingGroups", current.domain, domain);
    const group = await registry.putGroup({ id: current.id, name: body.name ?? current.name, domain }, "update");
    return c.json(view(principal, group), 200);
  });

  app.openapi(remove, async (c) => {
    const group = existing(c.req.valid("param").id);
    const principal = c.get("principal");
    requireReadWrite(principal);
    authorize(principal, "ThingGroups.DELETE", group.domain);
    await registry.deleteGroup(group.id);
    return c.body(null, 200);
  });

  app.openapi(addThings, async (c) => {
    const group = existing(c.req.valid("param").id);
    const { things } = c.req.valid("json");
    const principal = c.get("principal");
    requireReadWrite(principal);
    authorize(principal, "ThingGroups.UPDATE", group.domain);
    requireReadableThings(registry, principal, things);
    await registry.addMembers(group.id, things);
    return c.json(view(principal, existing(group.id)), 200);
  });

  app.openapi(removeThing, async (c) => {
    const { id, thingName } = c.req.valid("param");
    const group = existing(id);
    const principal = c.get("principal");
    requireReadWrite(principal);
    authorize(principal, "ThingGroups.UPDATE", group.domain);
    const member = view(principal, group).things.includes(thingName);
    if (!member) throw notFound("THING_NOT_FOUND", `Thing ${thingName} in group ${group.id}`, "thingName");
    await registry.removeMembers(group.id, [thingName]);
    return c.json(view(principal, existing(group.id)), 200);
  });
};
