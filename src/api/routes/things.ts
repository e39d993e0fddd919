import { createRoute, z } from "@hono/zod-openapi";
import type { Doc, FindRunner } from "../../observations/index.js";
import type { Thing, ThingsService } from "../../things/index.js";
import type { RouteModule } from "../context.js";
import { jsonBody, jsonResponses } from "../openapi.js";
import { ThingNameSchema, ThingSchema } from "./admin-things.js";

/**
 * The Thing API of MIC as its clients call it: POST /things, GET
 * /things/{thingName} and POST /things/find (an Elasticsearch 5.6 search over
 * the things the caller may read, answered as FIND answers). Devices connect
 * over MQTT to dms's own broker (see DESIGN.md), so `mqtt` is the only protocol.
 */
const tags = ["things (MIC)"];

const create = createRoute({
  method: "post",
  path: "/things",
  tags,
  summary: "Create a thing; needs Things.CREATE on its domain and ThingTypes.READ on its type",
  request: jsonBody(
    z.object({
      thingName: ThingNameSchema,
      thingType: z.string().min(1),
      domain: z.string().min(1),
      label: z.string().max(256).optional(),
      protocol: z.literal("mqtt").optional(),
    }),
  ),
  responses: jsonResponses(ThingSchema),
});

const get = createRoute({
  method: "get",
  path: "/things/{thingName}",
  tags,
  request: { params: z.object({ thingName: z.string().min(1) }) },
  responses: jsonResponses(ThingSchema),
});

const find = createRoute({
  method: "post",
  path: "/things/find",
  tags,
  summary: "An Elasticsearch 5.6 search request over the things in domains where the caller holds Things.READ",
  request: jsonBody(
    z.object({
      query: z
        .record(z.string(), z.unknown())
        .openapi({ description: "The search request: size, from, sort, _source, query, aggs" }),
      type: z
        .string()
        .regex(/^(thing|sub_thing)(,(thing|sub_thing))*$/, "a comma-separated list of thing and sub_thing")
        .optional()
        .openapi({ description: "dms has no sub-things: every thing is of type thing" }),
    }),
  ),
  responses: jsonResponses(
    z
      .record(z.string(), z.unknown())
      .openapi({ description: "As Elasticsearch 5.6 answers: took, timed_out, _shards, hits.total, hits.hits[]" }),
  ),
});

/** A thing as /things/find searches and returns it, under the field names of the registry. */
function docOf(thing: Thing, id: number): Doc {
  const source: Record<string, unknown> = {
    thingName: thing.thingName,
    thingType: thing.thingType,
    domain: thing.domain,
    createdAt: thing.createdAt,
    updatedAt: thing.updatedAt,
  };
  if (thing.label !== null) source.label = thing.label;
  if (thing.serial !== null) source.serial = thing.serial;
  return {
    id,
    thingType: thing.thingType,
    source,
    score: 0,
    hit: { index: "things", type: "thing", id: thing.thingName },
  };
}

export const thingRoutes: RouteModule<{
  things: ThingsService;
  clock: () => number;
  find: FindRunner;
}> = (app, { things: service, clock, find: findRunner }) => {
  app.openapi(create, async (c) => {
    const { protocol: _mqtt, ...body } = c.req.valid("json");
    return c.json((await service.create(c.get("principal"), body)).thing, 200);
  });

  app.openapi(get, (c) => c.json(service.get(c.get("principal"), c.req.valid("param").thingName), 200));

  app.openapi(find, async (c) => {
    const things = service.list(c.get("principal"));
    // Planned and searched on a FIND thread within FIND's budget, as /observations/find is: a query
    // of 1,000 patterns compiles for seconds, and the things a caller may read have no bound.
    const answer = await findRunner.search(
      c.req.valid("json").query,
      clock(),
      things.map(docOf),
      1,
      c.get("principal").homeDomain,
    );
    return c.body(answer, 200, { "content-type": "application/json" }) as never;
  });
};
