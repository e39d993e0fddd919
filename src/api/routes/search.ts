import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { Histogram } from "prom-client";
import { ApiError } from "../../errors/index.js";
import { MAX_RESULT_WINDOW, SEARCH_TYPES, SORT_FIELDS, type SearchIndex } from "../../search/index.js";
import { DATA_TYPES, RESOURCE_TYPES } from "../../things/index.js";
import type { Metrics } from "../../observability/index.js";
import type { RouteModule } from "../context.js";
import { jsonBody, jsonResponses } from "../openapi.js";
import { issueToError } from "../validation.js";

const SearchBody = z
  .object({
    term: z.string().max(256).openapi({ description: "Prefix words; empty for a wildcard search" }),
    size: z.number().int().min(0).max(MAX_RESULT_WINDOW).optional(),
    from: z.number().int().min(0).max(MAX_RESULT_WINDOW).optional(),
    sort: z
      .strictObject({
        field: z
          .string()
          .transform((f) => f.replace(/^metadata\./, ""))
          .pipe(z.enum(SORT_FIELDS))
          .optional(),
        order: z.enum(["asc", "desc"]).optional(),
      })
      .optional(),
    filter: z
      .strictObject({
        type: z.enum(SEARCH_TYPES).optional(),
        dataType: z.enum(DATA_TYPES).optional(),
        thingType: z.string().min(1).optional(),
        resourceType: z.enum(RESOURCE_TYPES).optional(),
        topDomain: z.string().min(1).optional(),
      })
      .optional(),
  })
  .openapi("SearchRequest");

const SearchResponse = z
  .object({
    took: z.number(),
    timed_out: z.boolean(),
    hits: z.object({
      total: z.number(),
      max_score: z.number().nullable(),
      hits: z.array(
        z.object({
          _index: z.string(),
          _type: z.string(),
          _id: z.string(),
          _score: z.number().nullable(),
          _source: z.object({
            id: z.string(),
            label: z.string(),
            metadata: z.record(z.string(), z.string().nullable()),
            searchType: z.enum(SEARCH_TYPES),
          }),
        }),
      ),
    }),
  })
  .openapi("SearchResponse");

const search = createRoute({
  method: "post",
  path: "/search",
  tags: ["search"],
  summary: "Prefix search over domains (Domains.READ) and thing-type resources (ThingTypes.READ)",
  request: jsonBody(SearchBody),
  responses: jsonResponses(SearchResponse),
});

/** Search answers every bad request as INVALID_ARGUMENTS on property `query` (INTERFACE.md, Errors). */
function queryHook(
  result: { success: boolean; error?: { issues: z.core.$ZodIssue[] }; data?: unknown; target: string },
  _c: Context,
): never {
  // A hook that answers nothing lets the handler run; the type says "no response of its own".
  if (result.success) return undefined as never;
  const issue = result.error?.issues[0];
  const detail = issue ? issueToError(issue, result.data, result.target).message : "invalid request";
  throw new ApiError("INVALID_ARGUMENTS", `Invalid search query: ${detail}`, "query");
}

export const searchRoutes: RouteModule<{ search: SearchIndex; metrics: Metrics }> = (
  app,
  { search: index, metrics },
) => {
  const duration = new Histogram({
    name: "dms_search_duration_seconds",
    help: "Time to answer a search, index work only",
    buckets: [0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5],
    registers: [metrics.registry],
  });
  app.openapi(
    search,
    (c) => {
      const stop = duration.startTimer();
      const answer = index.search(c.get("principal"), c.req.valid("json"));
      stop();
      return c.json(answer, 200);
    },
    queryHook,
  );
};
