import { createRoute, z } from "@hono/zod-openapi";
import { authorize, requireReadWrite, type Principal } from "../../auth/index.js";
import { notFound } from "../../errors/index.js";
import type { Thing, ThingRegistry } from "../../things/index.js";
import type { RouteModule } from "../context.js";
import { emptyResponses, jsonBody, jsonResponses } from "../openapi.js";
import { authorizeChange, requireDomain } from "./admin-support.js";

const ThingSchema = z
  .object({
    thingName: z.string(),
    thingType: z.string(),
    domain: z.string(),
    serial: z.string().nullable(),
    label: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi("Thing");

const Serial = z.string().min(1).max(128);
const Secret = z
  .string()
  .min(4)
  .max(256)
  .openapi({ description: "Device secret (MQTT password): write-only, stored hashed" });
const Label = z.string().max(256);
const NameParam = z.object({ thingName: z.string().min(1) });
const tags = ["admin: things"];

const list = createRoute({
  method: "get",
  path: "/admin/things",
  tags,
  summary: "Things in domains where the caller holds Things.READ",
  request: { query: z.object({ thingType: z.string().min(1).optional(), domain: z.string().min(1).optional() }) },
  responses: jsonResponses(z.object({ things: z.array(ThingSchema) })),
});
const get = createRoute({
  method: "get",
  path: "/admin/things/{thingName}",
  tags,
  request: { params: NameParam },
  responses: jsonResponses(ThingSchema),
});
const create = createRoute({
  method: "post",
  path: "/admin/things",
  tags,
  summary: "Create a thing; needs Things.CREATE on its domain and ThingTypes.READ on its type",
  request: jsonBody(
    z.object({
      thingName: z
        .string()
        .min(1)
        .max(128)
        .regex(/^[0-9A-Za-z_.:-]+$/, "0-9, A-Z, a-z, '_', '.', ':' or '-' only"),
      thingType: z.string().min(1),
      domain: z.string().min(1),
      serial: Serial.optional(),
      secret: Secret.optional(),
      label: Label.optional(),
    }),
  ),
  responses: jsonResponses(ThingSchema, "Created", 201),
});
const update = createRoute({
  method: "patch",
  path: "/admin/things/{thingName}",
  tags,
  summary:
    "Change type, domain, serial, secret or label; moving needs Things.DELETE on the old and Things.CREATE on the new",
  request: {
    params: NameParam,
    ...jsonBody(
      z.object({
        thingType: z.string().min(1).optional(),
        domain: z.string().min(1).optional(),
        serial: Serial.optional(),
        secret: Secret.optional(),
        label: Label.optional(),
      }),
    ),
  },
  responses: jsonResponses(ThingSchema),
});
const remove = createRoute({
  method: "delete",
  path: "/admin/things/{thingName}",
  tags,
  request: { params: NameParam },
  responses: emptyResponses(),
});

/** A thing type the caller cannot read is, to it, one that does not exist (THING_TYPE_NOT_FOUND). */
function readableThingType(registry: ThingRegistry, principal: Principal, id: string): void {
  const thingType = registry.thingType(id);
  if (!thingType || !principal.can("ThingTypes.READ", thingType.domain)) {
    throw notFound("THING_TYPE_NOT_FOUND", `Thing type ${id}`, "thingType");
  }
}

export const adminThingRoutes: RouteModule = (app, { identity, registry }) => {
  const existing = (thingName: string): Thing => {
    const thing = registry.thing(thingName);
    if (!thing) throw notFound("THING_NOT_FOUND", `Thing ${thingName}`, "thingName");
    return thing;
  };

  app.openapi(list, (c) => {
    const principal = c.get("principal");
    const things = registry.things(c.req.valid("query")).filter((t) => principal.can("Things.READ", t.domain));
    return c.json({ things }, 200);
  });

  app.openapi(get, (c) => {
    const thing = existing(c.req.valid("param").thingName);
    authorize(c.get("principal"), "Things.READ", thing.domain);
    return c.json(thing, 200);
  });

  app.openapi(create, async (c) => {
    const body = c.req.valid("json");
    const principal = c.get("principal");
    requireReadWrite(principal);
    requireDomain(identity, body.domain);
    authorize(principal, "Things.CREATE", body.domain);
    readableThingType(registry, principal, body.thingType);
    return c.json(await registry.putThing(body, "create"), 201);
  });

  app.openapi(update, async (c) => {
    const current = existing(c.req.valid("param").thingName);
    const body = c.req.valid("json");
    const principal = c.get("principal");
    requireReadWrite(principal);
    const domain = body.domain ?? current.domain;
    requireDomain(identity, domain);
    authorizeChange(principal, "Things", current.domain, domain);
    if (body.thingType !== undefined) readableThingType(registry, principal, body.thingType);
    const next = { ...body, thingName: current.thingName, thingType: body.thingType ?? current.thingType, domain };
    return c.json(await registry.putThing(next, "update"), 200);
  });

  app.openapi(remove, (c) => {
    const thing = existing(c.req.valid("param").thingName);
    const principal = c.get("principal");
    requireReadWrite(principal);
    authorize(principal, "Things.DELETE", thing.domain);
    registry.deleteThing(thing.thingName);
    return c.body(null, 200);
  });
};
