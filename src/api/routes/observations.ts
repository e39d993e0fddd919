import { Readable } from "node:stream";
import { createRoute, z } from "@hono/zod-openapi";
import { Histogram } from "prom-client";
import { authorize, type Principal } from "../../auth/index.js";
import { invalid, notFound } from "../../errors/index.js";
import {
  DEFAULT_PAGE_SIZE,
  MAX_PAGE_SIZE,
  declaredFieldTypes,
  executionDetail,
  type Exports,
  type FindRunner,
} from "../../observations/index.js";
import type { Metrics } from "../../observability/index.js";
import type { ThingRegistry, ThingType } from "../../things/index.js";
import type { RouteModule } from "../context.js";
import { emptyResponses, jsonBody, jsonResponses, PageInfoSchema } from "../openapi.js";

const tags = ["observations"];
const Raw = z.record(z.string(), z.unknown());

const FindBody = z
  .object({
    queryScope: z
      .object({
        thingTypes: z
          .array(z.string())
          .optional()
          .openapi({ description: "Thing type ids limiting the indices searched" }),
      })
      .optional(),
    query: Raw.openapi({
      description:
        "An Elasticsearch 5.6 search request: query (with a range on timestamp holding gte), aggs, size, from, sort, _source, track_scores",
    }),
  })
  .openapi("FindRequest");

const ExportJobFields = {
  jobName: z.string().optional(),
  type: z.enum(["scheduled", "instant"]).optional(),
  thingType: z.string().optional(),
  things: z.array(z.string()).optional(),
  from: z.string().optional().openapi({ description: "ISO 8601 in UTC; instant jobs" }),
  to: z.string().optional().openapi({ description: "ISO 8601 in UTC; instant jobs" }),
  schedule: z
    .string()
    .optional()
    .openapi({ description: "cron(<min> <hour> <dom> <month> <dow> <year>); scheduled jobs" }),
  timePeriod: z.string().optional().openapi({ description: "<x>d or <x>h; scheduled jobs" }),
  resources: z.array(z.string()).optional(),
  enabled: z.boolean().optional(),
  notifyByEmail: z.boolean().optional(),
  recipients: z.string().optional().openapi({ description: "Comma-separated e-mail addresses" }),
};
// Every field is optional to the schema so that a missing one is answered INVALID_ARGUMENTS, the key the interface gives CREATE.
const CreateBody = z.object(ExportJobFields).openapi("ExportJobCreate");
const UpdateBody = z
  .object(ExportJobFields)
  .omit({ type: true, thingType: true, things: true })
  .openapi("ExportJobUpdate");
const ExportJob = z
  .object({
    id: z.string(),
    createdAt: z.string(),
    updatedAt: z.string(),
    thingTypeLabel: z.string().optional(),
    ...ExportJobFields,
  })
  .openapi("ExportJob");
const ExecutionSummary = z
  .object({
    id: z.string(),
    jobId: z.string(),
    status: z.string(),
    submissionDateTime: z.string(),
    completionDateTime: z.string(),
    dataScannedInBytes: z.number(),
    executionFileName: z.string().optional(),
  })
  .openapi("ExportJobExecutionSummary");
const ExecutionDetail = ExecutionSummary.extend({
  engineExecutionTimeInMillis: z.number(),
  executionFileName: z.string(),
}).openapi("ExportJobExecution");
const SortInfo = z.object({ order: z.string() });
const ListQuery = z.object({
  size: z
    .string()
    .optional()
    .openapi({ description: `1-${MAX_PAGE_SIZE}, default ${DEFAULT_PAGE_SIZE}` }),
  marker: z.string().optional().openapi({ description: "pageInfo.nextMarker of the previous page" }),
  order: z.string().optional().openapi({ description: "asc or desc (default) by creation" }),
});
const JobId = z.object({ id: z.string().openapi({ description: "Export job id (uuid v4)" }) });
const ExecutionId = z.object({ id: z.string().openapi({ description: "Export execution id (uuid v4)" }) });
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

const find = createRoute({
  method: "post",
  path: "/observations/find",
  tags,
  summary: "FIND: an Elasticsearch 5.6 search over stored observations; needs Observations.READ on the home domain",
  request: jsonBody(FindBody),
  responses: jsonResponses(Raw),
});
const createJob = createRoute({
  method: "post",
  path: "/observations/export/jobs",
  tags,
  summary: "CREATE_EXPORT_JOB",
  request: jsonBody(CreateBody),
  responses: jsonResponses(ExportJob),
});
const listJobs = createRoute({
  method: "get",
  path: "/observations/export/jobs",
  tags,
  summary: "LIST_EXPORT_JOBS: the caller's own jobs by creation",
  request: { query: ListQuery },
  responses: jsonResponses(z.object({ exportJobs: z.array(Raw), pageInfo: PageInfoSchema, sortInfo: SortInfo })),
});
const getJob = createRoute({
  method: "get",
  path: "/observations/export/jobs/{id}",
  tags,
  summary: "GET_EXPORT_JOB",
  request: { params: JobId },
  responses: jsonResponses(ExportJob),
});
const updateJob = createRoute({
  method: "patch",
  path: "/observations/export/jobs/{id}",
  tags,
  summary: "UPDATE_EXPORT_JOB: only supplied fields change; scheduled jobs",
  request: { params: JobId, ...jsonBody(UpdateBody) },
  responses: jsonResponses(ExportJob),
});
const deleteJob = createRoute({
  method: "delete",
  path: "/observations/export/jobs/{id}",
  tags,
  summary: "DELETE_EXPORT_JOB: with its executions and their files",
  request: { params: JobId },
  responses: emptyResponses(),
});
const listJobExecutions = createRoute({
  method: "get",
  path: "/observations/export/jobs/{id}/executions",
  tags,
  summary: "LIST_EXPORT_JOB_EXECUTIONS_BY_JOB",
  request: { params: JobId, query: ListQuery },
  responses: jsonResponses(
    z.object({ exportJobExecutions: z.array(ExecutionSummary), pageInfo: PageInfoSchema, sortInfo: SortInfo }),
  ),
});
const listExecutions = createRoute({
  method: "get",
  path: "/observations/export/executions",
  tags,
  summary: "LIST_EXPORT_JOB_EXECUTIONS: the caller's own executions",
  request: { query: ListQuery },
  responses: jsonResponses(
    z.object({ exportJobExecutions: z.array(ExecutionSummary), pageInfo: PageInfoSchema, sortInfo: SortInfo }),
  ),
});
const getExecution = createRoute({
  method: "get",
  path: "/observations/export/executions/{id}",
  tags,
  summary: "GET_EXPORT_JOB_EXECUTION",
  request: { params: ExecutionId },
  responses: jsonResponses(ExecutionDetail),
});
const cancelExecution = createRoute({
  method: "post",
  path: "/observations/export/executions/{id}",
  tags,
  summary: "CANCEL_EXPORT_JOB_EXECUTION: to CANCELLED from any other state",
  request: { params: ExecutionId },
  responses: jsonResponses(ExecutionSummary),
});
const downloadExecution = createRoute({
  method: "get",
  path: "/observations/export/executions/{id}/download",
  tags,
  summary: "DOWNLOAD_EXPORT_JOB_EXECUTION: a signed URL (15 minutes) to the gzip-compressed CSV",
  request: { params: ExecutionId },
  responses: jsonResponses(z.object({ id: z.string(), StorageSignedURL: z.string() })),
});
const storageExport = createRoute({
  method: "get",
  path: "/storage/exports/{id}",
  tags,
  summary: "The file behind a signed export download URL; no credentials besides the signature",
  security: [],
  request: {
    params: ExecutionId,
    query: z.object({ expires: z.string().optional(), signature: z.string().optional() }),
  },
  responses: {
    200: {
      description: "The CSV, gzip-compressed",
      content: { "application/gzip": { schema: z.string().openapi({ format: "binary" }) } },
    },
    403: { description: "Missing, tampered or expired signature" },
    404: { description: "No such file" },
  },
});

interface ObservationDeps {
  exports: Exports;
  find: FindRunner;
  registry: ThingRegistry;
  metrics: Metrics;
  clock: () => number;
}

export const observationRoutes: RouteModule<ObservationDeps> = (app, services) => {
  const exports = services.exports;
  const findSeconds = new Histogram({
    name: "dms_find_duration_seconds",
    help: "FIND: planning, reading and evaluating a query",
    buckets: [0.005, 0.01, 0.05, 0.1, 0.5, 1, 5],
    registers: [services.metrics.registry],
  });

  app.openapi(find, async (c) => {
    const principal = c.get("principal");
    authorize(principal, "Observations.READ", principal.homeDomain);
    const body = c.req.valid("json");
    const stop = findSeconds.startTimer();
    const types = readableThingTypes(services, principal, body.queryScope?.thingTypes);
    const scope = { thingTypes: types.map((t) => t.id), fieldTypes: declaredFieldTypes(types) };
    try {
      // Evaluated off this thread and serialized there: the answer comes back as JSON text, which
      // the route's typing (made for c.json of an object) cannot see is the declared JSON answer.
      const answer = await services.find.find(body.query, services.clock(), scope, principal.homeDomain);
      return c.body(answer, 200, { "content-type": "application/json" }) as never;
    } finally {
      stop();
    }
  });

  app.openapi(createJob, async (c) =>
    c.json(await exports.service.create(c.get("principal"), c.req.valid("json")), 200),
  );
  app.openapi(listJobs, async (c) =>
    c.json(await exports.service.list(c.get("principal"), listQuery(c.req.valid("query"))), 200),
  );
  app.openapi(getJob, async (c) =>
    c.json(await exports.service.get(c.get("principal"), jobId(c.req.valid("param").id)), 200),
  );
  app.openapi(updateJob, async (c) =>
    c.json(await exports.service.update(c.get("principal"), jobId(c.req.valid("param").id), c.req.valid("json")), 200),
  );
  app.openapi(deleteJob, async (c) => {
    await exports.service.delete(c.get("principal"), jobId(c.req.valid("param").id));
    return c.body(null, 200);
  });
  app.openapi(listJobExecutions, async (c) =>
    c.json(
      await exports.service.executions(
        c.get("principal"),
        jobId(c.req.valid("param").id),
        listQuery(c.req.valid("query")),
      ),
      200,
    ),
  );
  app.openapi(listExecutions, async (c) =>
    c.json(await exports.service.executions(c.get("principal"), undefined, listQuery(c.req.valid("query"))), 200),
  );
  app.openapi(getExecution, async (c) =>
    c.json(executionDetail(await exports.service.execution(c.get("principal"), c.req.valid("param").id)), 200),
  );
  app.openapi(cancelExecution, async (c) =>
    c.json(await exports.service.cancel(c.get("principal"), c.req.valid("param").id), 200),
  );
  app.openapi(downloadExecution, async (c) => {
    const e = await exports.service.execution(c.get("principal"), c.req.valid("param").id);
    if (e.status !== "SUCCEEDED" || (await exports.files.size(e.id)) === undefined) {
      throw notFound("EXPORT_EXECUTION_NOT_FOUND", `File of export execution ${e.id} (status ${e.status})`, "id");
    }
    return c.json({ id: e.id, StorageSignedURL: exports.downloadUrl(e.id) }, 200);
  });

  app.openapi(storageExport, async (c) => {
    const { id } = c.req.valid("param");
    exports.signer.assertSigned(c.req.raw);
    const e = await exports.store.execution(id);
    const file = e && (await exports.files.open(id));
    if (!e || !file) throw notFound("NOT_FOUND", `Export file ${id}`);
    return c.body(Readable.toWeb(file.stream) as ReadableStream, 200, {
      "content-type": "application/gzip",
      "content-length": String(file.size),
      "content-disposition": `attachment; filename="${e.executionFileName.replace(/["\\\r\n]/g, "_")}.gz"`,
    });
  });
};

/**
 * The indices FIND may search: thing types on which the caller holds
 * ThingTypes.READ, limited to `queryScope.thingTypes` when given.
 */
function readableThingTypes(
  services: Pick<ObservationDeps, "registry">,
  principal: Principal,
  scope: string[] | undefined,
): ThingType[] {
  const readable = services.registry.thingTypes().filter((t) => principal.can("ThingTypes.READ", t.domain));
  if (!scope) return readable;
  const wanted = new Set(scope);
  return readable.filter((t) => wanted.has(t.id));
}

function jobId(id: string): string {
  if (!UUID.test(id)) throw invalid("id", "must be a uuid v4");
  return id;
}

function listQuery(q: { size?: string; marker?: string; order?: string }) {
  const size = q.size === undefined ? DEFAULT_PAGE_SIZE : Number(q.size);
  if (!Number.isInteger(size) || size < 1 || size > MAX_PAGE_SIZE)
    throw invalid("size", `must be an integer from 1 to ${MAX_PAGE_SIZE}`);
  if (q.marker !== undefined && !/^[1-9]\d{0,15}$/.test(q.marker))
    throw invalid("marker", "is not a marker this service gave");
  const order = q.order ?? "desc";
  if (order !== "asc" && order !== "desc") throw invalid("order", "must be asc or desc");
  return { size, marker: q.marker === undefined ? undefined : Number(q.marker), order } as const;
}
