import { createRoute, z } from "@hono/zod-openapi";
import { authorize, requireReadWrite, type Identity } from "../../auth/index.js";
import { CLASSIFICATIONS, type EventStore } from "../../events/index.js";
import { invalid, notFound } from "../../errors/index.js";
import type { RouteModule } from "../context.js";
import { jsonResponses, PageInfoSchema } from "../openapi.js";

const EventSchema = z
  .object({
    id: z.string(),
    ruleId: z.string(),
    category: z.string().optional(),
    thingName: z.string(),
    thingType: z.string(),
    domain: z.string(),
    classification: z.enum(CLASSIFICATIONS),
    message: z.string(),
    acknowledgmentRequired: z.boolean(),
    acknowledged: z.boolean(),
    acknowledgedAt: z.string().optional(),
    acknowledgedBy: z.string().optional(),
    time: z.string(),
  })
  .openapi("Event");

/** Epoch milliseconds or ISO 8601. */
const Instant = z.string().refine((v) => parseInstant(v) !== undefined, "epoch milliseconds or ISO 8601");

const EventQuery = z.object({
  thingName: z.string().min(1).optional(),
  category: z.string().min(1).optional(),
  classification: z.enum(CLASSIFICATIONS).optional(),
  from: Instant.optional(),
  to: Instant.optional(),
  acknowledged: z.enum(["true", "false"]).optional(),
  size: z.coerce.number().int().min(1).max(1000).default(100),
  marker: z
    .string()
    .regex(/^\d{1,15}$/)
    .optional(),
});
const tags = ["events"];

const list = createRoute({
  method: "get",
  path: "/events",
  tags,
  summary: "Events made by EVENT actions, newest first, in domains where the caller holds Events.READ",
  request: { query: EventQuery },
  responses: jsonResponses(
    z.object({
      events: z.array(EventSchema),
      pageInfo: PageInfoSchema,
    }),
  ),
});
const ack = createRoute({
  method: "post",
  path: "/events/{id}/ack",
  tags,
  summary: "Acknowledge an event (Events.UPDATE on its domain); a second ack keeps the first",
  request: { params: z.object({ id: z.string().min(1) }) },
  responses: jsonResponses(EventSchema),
});

function parseInstant(v: string): number | undefined {
  if (/^\d{1,15}$/.test(v)) return Number(v);
  const t = Date.parse(v);
  return Number.isNaN(t) ? undefined : t;
}

export const eventRoutes: RouteModule<{ events: EventStore; identity: Identity }> = (app, { events, identity }) => {
  app.openapi(list, async (c) => {
    const principal = c.get("principal");
    const q = c.req.valid("query");
    const from = q.from === undefined ? undefined : parseInstant(q.from);
    const to = q.to === undefined ? undefined : parseInstant(q.to);
    if (from !== undefined && to !== undefined && from > to) throw invalid("from", "from is after to");
    const page = await events.list({
      domains: [...principal.domainsWith("Events.READ", identity.domains())],
      thingName: q.thingName,
      category: q.category,
      classification: q.classification,
      from,
      to,
      acknowledged: q.acknowledged === undefined ? undefined : q.acknowledged === "true",
      size: q.size,
      marker: q.marker === undefined ? undefined : Number(q.marker),
    });
    return c.json(
      {
        events: page.events,
        pageInfo: {
          size: q.size,
          itemCount: page.events.length,
          ...(q.marker === undefined ? {} : { marker: q.marker }),
          hasNext: page.nextMarker !== undefined,
          ...(page.nextMarker === undefined ? {} : { nextMarker: page.nextMarker }),
        },
      },
      200,
    );
  });

  app.openapi(ack, async (c) => {
    const principal = c.get("principal");
    const { id } = c.req.valid("param");
    const event = await events.get(id);
    // Another tenant's event answers as a missing one: ids are sequential, existence is not to be probed.
    if (!event || !principal.can("Events.READ", event.domain)) throw notFound("NOT_FOUND", `Event ${id}`, "id");
    requireReadWrite(principal);
    authorize(principal, "Events.UPDATE", event.domain);
    return c.json((await events.acknowledge(id, principal.userName))!, 200);
  });
};
