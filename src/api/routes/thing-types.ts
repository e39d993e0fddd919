import { createRoute, z } from "@hono/zod-openapi";
import type { ThingTypesService } from "../../things/index.js";
import type { RouteModule } from "../context.js";
import { jsonResponses } from "../openapi.js";
import { ThingTypeSchema } from "./admin-thing-types.js";

/**
 * The Thing Type API of MIC as its clients call it: GET /thingtypes (a bare
 * array, which the clients index as `$[0].id`) and GET /thingtypes/{id}. The
 * admin API (/admin/thing-types) creates and changes them.
 */
const tags = ["thing types (MIC)"];

const list = createRoute({
  method: "get",
  path: "/thingtypes",
  tags,
  summary: "Thing types in domains where the caller holds ThingTypes.READ",
  responses: jsonResponses(z.array(ThingTypeSchema)),
});

const get = createRoute({
  method: "get",
  path: "/thingtypes/{id}",
  tags,
  summary: "A thing type; one the caller cannot read is THING_TYPE_NOT_FOUND",
  request: { params: z.object({ id: z.string().min(1) }) },
  responses: jsonResponses(ThingTypeSchema),
});

export const thingTypeRoutes: RouteModule<{ thingTypes: ThingTypesService }> = (app, { thingTypes }) => {
  app.openapi(list, (c) => c.json(thingTypes.list(c.get("principal")), 200));

  app.openapi(get, (c) => c.json(thingTypes.readable(c.get("principal"), c.req.valid("param").id), 200));
};
