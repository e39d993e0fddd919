import { createRoute, z } from "@hono/zod-openapi";
import { authorize, requireReadWrite, type Identity } from "../../auth/index.js";
import { ApiError, notFound } from "../../errors/index.js";
import type { Outbox } from "../../actions/index.js";
import type { RouteModule } from "../context.js";
import { jsonResponses, PageInfoSchema } from "../openapi.js";

const DeliverySchema = z
  .object({
    id: z.string(),
    idempotencyKey: z.string(),
    ruleId: z.string(),
    thingName: z.string(),
    type: z.string(),
    status: z.string(),
    attempts: z.number(),
    lastError: z.string().optional(),
    config: z.record(z.string(), z.unknown()),
    createdAt: z.string(),
    updatedAt: z.string(),
    nextAttemptAt: z.string().optional(),
  })
  .openapi("Delivery");

const PageQuery = z.object({
  size: z.coerce.number().int().min(1).max(1000).default(100),
  marker: z
    .string()
    .regex(/^\d{1,15}$/)
    .optional(),
});
const tags = ["actions"];

const list = createRoute({
  method: "get",
  path: "/actions/dead-letters",
  tags,
  summary: "Deliveries that ran out of attempts, newest first, with the last error (Rules.READ on the rule's domain)",
  request: { query: PageQuery },
  responses: jsonResponses(
    z.object({
      deadLetters: z.array(DeliverySchema),
      pageInfo: PageInfoSchema,
    }),
  ),
});
const retry = createRoute({
  method: "post",
  path: "/actions/dead-letters/{id}/retry",
  tags,
  summary: "Send a dead letter again with a fresh set of attempts (Rules.UPDATE on the rule's domain)",
  request: { params: z.object({ id: z.string().min(1) }) },
  responses: jsonResponses(DeliverySchema),
});

export const actionRoutes: RouteModule<{ actions: Outbox; identity: Identity }> = (app, { actions, identity }) => {
  app.openapi(list, async (c) => {
    const principal = c.get("principal");
    const { size, marker } = c.req.valid("query");
    const domains = [...principal.domainsWith("Rules.READ", identity.domains())];
    const page = await actions.deadLetters(domains, size, marker === undefined ? undefined : Number(marker));
    return c.json(
      {
        deadLetters: page.items,
        pageInfo: {
          size,
          itemCount: page.items.length,
          ...(marker === undefined ? {} : { marker }),
          hasNext: page.nextMarker !== undefined,
          ...(page.nextMarker === undefined ? {} : { nextMarker: page.nextMarker }),
        },
      },
      200,
    );
  });

  app.openapi(retry, async (c) => {
    const principal = c.get("principal");
    const { id } = c.req.valid("param");
    const domain = await actions.domainOf(id);
    // Another tenant's dead letter answers as a missing one: ids are sequential, existence is not to be probed.
    if (domain === undefined || !principal.can("Rules.READ", domain)) {
      throw notFound("NOT_FOUND", `Dead letter ${id}`, "id");
    }
    requireReadWrite(principal);
    authorize(principal, "Rules.UPDATE", domain);
    const retried = await actions.retryDeadLetter(id);
    if (!retried) throw new ApiError("INVALID_ACTION", `Delivery ${id} is not a dead letter`, "id");
    return c.json(retried, 200);
  });
};
