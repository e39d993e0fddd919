import { createRoute, z } from "@hono/zod-openapi";
import { requireReadWrite, ROOT_DOMAIN } from "../../auth/index.js";
import {
  DEAD_LETTER_REASONS,
  type DeadLetterReason,
  type EngineService,
  type StoredDeadLetter,
} from "../../engine/index.js";
import { ApiError } from "../../errors/index.js";
import type { ThingRegistry } from "../../things/index.js";
import type { RouteModule } from "../context.js";
import { jsonBody, jsonResponses } from "../openapi.js";

/** At most this many observations in one request; a bigger batch is one more request. */
export const MAX_OBSERVATIONS_PER_REQUEST = 10_000;

const tags = ["observations: ingest"];

/**
 * One item's error: its index in the body, the interface's error key (`INVALID_ARGUMENTS` for an item
 * that is not an observation, `THING_NOT_FOUND`, `NOT_AUTHORIZED`) and the dead letter's finer reason.
 */
const Rejected = z
  .object({
    index: z.number().int(),
    messageKey: z.enum(["INVALID_ARGUMENTS", "THING_NOT_FOUND", "NOT_AUTHORIZED"]),
    reason: z.string(),
    message: z.string(),
  })
  .openapi("RejectedObservation");

/** The error key a caller reads for an item the engine refused. */
function itemErrorKey(reason: DeadLetterReason): "INVALID_ARGUMENTS" | "THING_NOT_FOUND" {
  return reason === "unknown-thing" ? "THING_NOT_FOUND" : "INVALID_ARGUMENTS";
}

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

interface IngestDeps {
  /** The engine, when this process runs the `engine` role; else these operations answer 503. */
  engine: EngineService | undefined;
  registry: ThingRegistry;
}

export const observationsIngestRoutes: RouteModule<IngestDeps> = (app, services) => {
  const engine = (): EngineService => {
    if (!services.engine)
      throw new ApiError("INTERNAL_ERROR", "the engine does not run in this process (DMS_ROLES)", undefined, 503);
    return services.engine;
  };

  app.openapi(ingest, async (c) => {
    const principal = c.get("principal");
    requireReadWrite(principal);
    const items = c.req.valid("json");
    // Posting for a thing needs Observations.CREATE on its domain; unknown things go on to the dead letters.
    const result = await engine().http.post(items, (name) => {
      const thing = services.registry.thing(name);
      return thing && !principal.can("Observations.CREATE", thing.domain)
        ? `no Observations.CREATE on domain ${thing.domain}`
        : undefined;
    });
    const rejected: z.infer<typeof Rejected>[] = result.denied.map(({ index, message }) => ({
      index,
      messageKey: "NOT_AUTHORIZED",
      reason: "NOT_AUTHORIZED",
      message,
    }));
    for (const r of result.rejected) {
      rejected.push({ index: r.index, messageKey: itemErrorKey(r.reason), reason: r.reason, message: r.message });
    }
    rejected.sort((a, b) => a.index - b.index);
    return c.json({ accepted: result.accepted, triggered: result.triggered, rejected }, 200);
  });

  app.openapi(deadLetters, async (c) => {
    const principal = c.get("principal");
    const { size, marker, reason } = c.req.valid("query");
    // A dead letter of a known thing is visible with Observations.READ on its domain; the others only at the root.
    const visible = (d: StoredDeadLetter): boolean => principal.can("Observations.READ", d.domain ?? ROOT_DOMAIN);
    const out: StoredDeadLetter[] = [];
    let before = marker;
    for (;;) {
      const page = await engine().deadLetters.list({ limit: 500, before, reason });
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
