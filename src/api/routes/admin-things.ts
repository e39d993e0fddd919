import { createRoute, z } from "@hono/zod-openapi";
import {
  MIN_CHOSEN_SECRET_LENGTH,
  type ThingOutcome,
  type ThingsService,
  type WrittenThing,
} from "../../things/index.js";
import type { RouteModule } from "../context.js";
import { emptyResponses, jsonBody, jsonResponses } from "../openapi.js";

export const ThingSchema = z
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
  .min(MIN_CHOSEN_SECRET_LENGTH)
  .max(256)
  .openapi({
    description: `Device secret (MQTT password), at least ${MIN_CHOSEN_SECRET_LENGTH} characters: write-only, stored hashed (PBKDF2-SHA512)`,
  });
const Label = z.string().max(256);
const GenerateSecret = z.boolean().optional().openapi({
  description:
    "true: dms generates the secret (192 random bits, checked in microseconds at connect) and answers it once, in `secret`; not with `secret`",
});
const NameParam = z.object({ thingName: z.string().min(1) });
const tags = ["admin: things"];

/** A thing as answered to a write; `secret` only when dms generated it, and only this once. */
const WrittenThingSchema = ThingSchema.extend({
  secret: z.string().optional().openapi({ description: "The generated secret: shown once, never again" }),
}).openapi("WrittenThing");

/** Most things one bulk call takes: one call stays well under a second and under DMS_MAX_BODY_BYTES. */
export const BULK_THINGS_LIMIT = 1000;

export const ThingNameSchema = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[0-9A-Za-z_.:-]+$/, "0-9, A-Z, a-z, '_', '.', ':' or '-' only");

const NewThingBody = z.object({
  thingName: ThingNameSchema,
  thingType: z.string().min(1),
  domain: z.string().min(1),
  serial: Serial.optional(),
  secret: Secret.optional(),
  generateSecret: GenerateSecret,
  label: Label.optional(),
});
const ThingChangeBody = z.object({
  thingType: z.string().min(1).optional(),
  domain: z.string().min(1).optional(),
  serial: Serial.optional(),
  secret: Secret.optional(),
  generateSecret: GenerateSecret,
  label: Label.optional(),
});
const BulkErrorSchema = z
  .object({
    index: z.number().int().openapi({ description: "Position of the item in the request's `things`" }),
    thingName: z.string(),
    message: z.string(),
    messageKey: z.string(),
    property: z.string().optional(),
  })
  .openapi("BulkThingError");

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
  request: jsonBody(NewThingBody),
  responses: jsonResponses(WrittenThingSchema, "Created"),
});
const update = createRoute({
  method: "patch",
  path: "/admin/things/{thingName}",
  tags,
  summary:
    "Change type, domain, serial, secret or label; moving needs Things.DELETE on the old and Things.CREATE on the new",
  request: { params: NameParam, ...jsonBody(ThingChangeBody) },
  responses: jsonResponses(WrittenThingSchema),
});
const bulkCreate = createRoute({
  method: "post",
  path: "/admin/things/bulk",
  tags,
  summary: `Create up to ${BULK_THINGS_LIMIT} things in one call, each as POST /admin/things would (privileges per thing); one refused does not stop the others`,
  request: jsonBody(z.object({ things: z.array(NewThingBody).min(1).max(BULK_THINGS_LIMIT) })),
  responses: jsonResponses(
    z.object({ created: z.array(WrittenThingSchema), errors: z.array(BulkErrorSchema) }),
    "Per-thing results: the things created, in request order, and an error for each one refused",
  ),
});
const bulkUpdate = createRoute({
  method: "patch",
  path: "/admin/things",
  tags,
  summary: `Change up to ${BULK_THINGS_LIMIT} things in one call, each as PATCH /admin/things/{thingName} would; one refused does not stop the others`,
  request: jsonBody(
    z.object({
      things: z
        .array(ThingChangeBody.extend({ thingName: z.string().min(1) }))
        .min(1)
        .max(BULK_THINGS_LIMIT),
    }),
  ),
  responses: jsonResponses(
    z.object({ updated: z.array(WrittenThingSchema), errors: z.array(BulkErrorSchema) }),
    "Per-thing results: the things as they now are, in request order, and an error for each one refused",
  ),
});
const remove = createRoute({
  method: "delete",
  path: "/admin/things/{thingName}",
  tags,
  request: { params: NameParam },
  responses: emptyResponses(),
});

function written(outcome: WrittenThing) {
  return outcome.secret === undefined ? outcome.thing : { ...outcome.thing, secret: outcome.secret };
}

/** Splits per-thing outcomes into the things written and the errors, each error naming its item. */
function bulkAnswer(outcomes: ThingOutcome[], names: string[]) {
  const done: z.infer<typeof WrittenThingSchema>[] = [];
  const errors: z.infer<typeof BulkErrorSchema>[] = [];
  outcomes.forEach((outcome, index) => {
    if (outcome.status === "failed") errors.push({ index, thingName: names[index]!, ...outcome.error.body() });
    else done.push(written(outcome));
  });
  return { done, errors };
}

/** The checks are the service's (`ThingsService`): this module maps HTTP onto it. */
export const adminThingRoutes: RouteModule<{ things: ThingsService }> = (app, { things: service }) => {
  app.openapi(list, (c) => c.json({ things: service.list(c.get("principal"), c.req.valid("query")) }, 200));

  app.openapi(get, (c) => c.json(service.get(c.get("principal"), c.req.valid("param").thingName), 200));

  app.openapi(create, async (c) => c.json(written(await service.create(c.get("principal"), c.req.valid("json"))), 200));

  app.openapi(update, async (c) => {
    const outcome = await service.update(c.get("principal"), c.req.valid("param").thingName, c.req.valid("json"));
    return c.json(written(outcome), 200);
  });

  app.openapi(bulkCreate, async (c) => {
    const { things } = c.req.valid("json");
    const outcomes = await service.bulkCreate(c.get("principal"), things);
    const { done, errors } = bulkAnswer(
      outcomes,
      things.map((t) => t.thingName),
    );
    return c.json({ created: done, errors }, 200);
  });

  app.openapi(bulkUpdate, async (c) => {
    const { things } = c.req.valid("json");
    const outcomes = await service.bulkUpdate(c.get("principal"), things);
    const { done, errors } = bulkAnswer(
      outcomes,
      things.map((t) => t.thingName),
    );
    return c.json({ updated: done, errors }, 200);
  });

  app.openapi(remove, async (c) => {
    await service.delete(c.get("principal"), c.req.valid("param").thingName);
    return c.body(null, 200);
  });
};
