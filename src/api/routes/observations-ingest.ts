import { createRoute, z } from "@hono/zod-openapi";
import { requireReadWrite, ROOT_DOMAIN } from "../../auth/index.js";
import { DEAD_LETTER_REASONS, type EngineService, type StoredDeadLetter } from "../../engine/index.js";
import { ApiError } from "../../errors/index.js";
import type { RouteModule } from "../context.js";
import { jsonBody, jsonResponses } from "../openapi.js";

/** At most this many observations in one request; a bigger batch is one more request. */
export const MAX_OBSERVATIONS_PER_REQUEST = 10_000;

const tags = ["observations: ingest"];

const Rejected = z.object({
  index: z.number().int(),
  reason: z.string(),
  message: z.string(),
});

const ingest = createRoute({
  method: "post",
  path: "/observations",
  tags,
  summary: "The embedded source: a JSON array of observations, answered once they are stored and evaluated",
  request: jsonBody(z.array(z.unknown()).max(MAX_OBSERVATIONS_PER_REQUEST)),
  responses: jsonResponses(
    z
      .object({ accepted: z.number().int(), triggered: z.number().int(), rejected: z.array(Rejected) })
      .openapi("IngestResult"),
  ),
});

const DeadLetterSchema = z
  .object({
    id: z.number().int(),
    source: z.string(),
    partition: z.number().int().optional(),
    offset: z.string().optional(),
    thingName: z.string().optional(),
    domain: z.string().optional(),
    reason: z.enum(DEAD_LETTER_REASONS),
    message: z.string(),
    payload: z.string().optional(),
    createdAt: z.string(),
  })
  .openapi("DeadLetter");

const deadLetters = createRoute({
  method: "get",
  path: "/observations/dead-letters",
  tags,
  summary: "Messages the engine could not evaluate, newest first",
  request: {
    query: z.object({
      size: z.coerce.number().int().min(1).max(1000).default(100),
      /** Continue below this id (the `marker` of the previous page). */
      marker: z.coerce.number().int().min(1).optional(),
      reason: z.enum(DEAD_LETTER_REASONS).optional(),
    }),
  },
  responses: jsonResponses(
    z.object({
      deadLetters: z.array(DeadLetterSchema),
      pageInfo: z.object({ size: z.number().int(), marker: z.number().int().optional() }),
    }),
  ),
});

export const observationsIngestRoutes: RouteModule = (app, services) => {
  const engine = (): EngineService => {
    if (!services.engine)
      throw new ApiError("INTERNAL_ERROR", "the engine does not run in this process (DMS_ROLES)", undefined, 503);
    return services.engine;
  };

  app.openapi(ingest, async (c) => {
    const principal = c.get("principal");
    requireReadWrite(principal);
    const items = c.req.valid("json");
    const rejected: z.infer<typeof Rejected>[] = [];
    const allowed: unknown[] = [];
    const indexes: number[] = [];
    items.forEach((item, index) => {
      // Posting for a thing needs Observations.CREATE on its domain; unknown things go on to the dead letters.
      const name = (item as { thingName?: unknown } | null)?.thingName;
      const thing = typeof name === "string" ? services.registry.thing(name) : undefined;
      if (thing && !principal.can("Observations.CREATE", thing.domain)) {
        rejected.push({ index, reason: "NOT_AUTHORIZED", message: `no Observations.CREATE on domain ${thing.domain}` });
        return;
      }
      allowed.push(item);
      indexes.push(index);
    });
    const result = await engine().submit(allowed);
    for (const r of result.rejected) rejected.push({ ...r, index: indexes[r.index]! });
    rejected.sort((a, b) => a.index - b.index);
    return c.json({ accepted: result.accepted, triggered: result.triggered, rejected }, 200);
  });

  app.openapi(deadLetters, (c) => {
    const principal = c.get("principal");
    const { size, marker, reason } = c.req.valid("query");
    // A dead letter of a known thing is visible with Observations.READ on its domain; the others only at the root.
    const visible = (d: StoredDeadLetter): boolean => principal.can("Observations.READ", d.domain ?? ROOT_DOMAIN);
    const out: StoredDeadLetter[] = [];
    let before = marker;
    for (;;) {
      const page = engine().deadLetters.list({ limit: 500, before, reason });
      for (const d of page) {
        if (out.length === size) break;
        if (visible(d)) out.push(d);
      }
      if (out.length === size || page.length < 500) break;
      before = page[page.length - 1]!.id;
    }
    const next = out.length === size ? out[out.length - 1]!.id : undefined;
    return c.json(
      {
        deadLetters: out.map((d) => ({ ...d, createdAt: new Date(d.createdAt).toISOString() })),
        pageInfo: next === undefined ? { size: out.length } : { size: out.length, marker: next },
      },
      200,
    );
  });
};
