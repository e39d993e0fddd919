import { createRoute, z } from "@hono/zod-openapi";
import {
  EXECUTION_STATUSES,
  JOB_STATUSES,
  JobExecutionSchema,
  JobExecutionSummaryItemSchema,
  NewJobSchema,
  TARGET_SELECTIONS,
  ThingJobListItemSchema,
  ThingJobSchema,
  type ExecutionStatus,
  type JobsService,
} from "../../jobs/index.js";
import type { RouteModule } from "../context.js";
import { emptyResponses, ErrorSchema, jsonBody, jsonResponses } from "../openapi.js";

const tags = ["thing jobs"];
const digits = z.string().regex(/^\d{1,15}$/, "a string of digits");
const force = z.enum(["true", "false"]).default("false");

// Named here for /openapi.json: src/jobs's schemas are plain zod, made before the OpenAPI extension may load.
const ThingJob = z.object(ThingJobSchema.shape).openapi("ThingJob");
const Execution = z.object(JobExecutionSchema.shape).openapi("JobExecution");
const JobRef = z.object({ jobId: z.string(), description: z.string() });
const JobParam = z.object({ jobId: z.string().min(1) });
const ExecutionParam = z.object({ jobId: z.string().min(1), thingName: z.string().min(1) });

const generateUploadUrl = createRoute({
  method: "post",
  path: "/thing-jobs/documents",
  tags,
  summary: "GENERATE_UPLOAD_URL: a signed URL for one PUT of a JSON job document (15 minutes, 32 KiB)",
  request: jsonBody(z.object({ documentName: z.string().min(1).max(64), domain: z.string().min(1) })),
  responses: jsonResponses(z.object({ documentName: z.string(), documentId: z.string(), signedUrl: z.string() })),
});
const createJob = createRoute({
  method: "post",
  path: "/thing-jobs/jobs",
  tags,
  summary: "CREATE a thing job",
  request: jsonBody(NewJobSchema),
  responses: jsonResponses(z.object({ jobId: z.string(), domain: z.string(), description: z.string() })),
});
const cancelJob = createRoute({
  method: "patch",
  path: "/thing-jobs/jobs/{jobId}",
  tags,
  summary: "CANCEL a thing job",
  request: {
    params: JobParam,
    body: {
      required: false,
      content: { "application/json": { schema: z.object({ comment: z.string().max(2028).optional() }) } },
    },
  },
  responses: jsonResponses(JobRef),
});
const describeJob = createRoute({
  method: "get",
  path: "/thing-jobs/jobs/{jobId}",
  tags,
  summary: "DESCRIBE a thing job",
  request: { params: JobParam },
  responses: jsonResponses(ThingJob),
});
const listJobs = createRoute({
  method: "get",
  path: "/thing-jobs/jobs",
  tags,
  summary: "LIST thing jobs in the domains where the caller holds ThingJobs.READ, newest first",
  request: {
    query: z.object({
      status: z.enum(JOB_STATUSES).optional(),
      group: z.string().min(1).optional(),
      targetSelection: z.enum(TARGET_SELECTIONS).optional(),
    }),
  },
  responses: jsonResponses(z.array(ThingJobListItemSchema)),
});
const listExecutions = createRoute({
  method: "get",
  path: "/thing-jobs/jobs/{jobId}/job-executions",
  tags,
  summary: "LIST_JOB_EXECUTIONS",
  request: {
    params: JobParam,
    // SUCCESS is how the interface's get operation spells SUCCEEDED; both are accepted.
    query: z.object({ status: z.enum([...EXECUTION_STATUSES, "SUCCESS"]).optional() }),
  },
  responses: jsonResponses(z.array(JobExecutionSummaryItemSchema)),
});
const associateTargets = createRoute({
  method: "post",
  path: "/thing-jobs/jobs/{jobId}/targets",
  tags,
  summary: "ASSOCIATE_TARGETS_WITH_JOB: add thing groups to a CONTINUOUS job",
  request: {
    params: JobParam,
    ...jsonBody(z.object({ targets: z.array(z.string().min(1)).min(1), comment: z.string().max(2028).optional() })),
  },
  responses: jsonResponses(JobRef),
});
const getExecution = createRoute({
  method: "get",
  path: "/thing-jobs/jobs/{jobId}/job-executions/{thingName}",
  tags,
  summary: "GET_JOB_EXECUTION: by executionNumber, else the thing's latest",
  request: { params: ExecutionParam, query: z.object({ executionNumber: digits.optional() }) },
  responses: jsonResponses(Execution),
});
const cancelExecution = createRoute({
  method: "patch",
  path: "/thing-jobs/jobs/{jobId}/job-executions/{thingName}",
  tags,
  summary: "CANCEL_JOB_EXECUTION",
  request: { params: ExecutionParam, query: z.object({ force, expectedVersion: digits.optional() }) },
  responses: {
    ...emptyResponses(),
    409: errorResponse("INVALID_ACTION: terminal, IN_PROGRESS without force, or stale expectedVersion"),
  },
});
const deleteExecution = createRoute({
  method: "delete",
  path: "/thing-jobs/jobs/{jobId}/job-executions/{thingName}/executionNumber/{executionNumber}",
  tags,
  summary: "DELETE_JOB_EXECUTION",
  request: { params: ExecutionParam.extend({ executionNumber: digits }), query: z.object({ force }) },
  responses: { ...emptyResponses(), 409: errorResponse("INVALID_ACTION: IN_PROGRESS without force") },
});
const deleteJob = createRoute({
  method: "delete",
  path: "/thing-jobs/jobs/{jobId}",
  tags,
  summary: "DELETE a thing job",
  request: { params: JobParam, query: z.object({ force }) },
  responses: { ...emptyResponses(), 409: errorResponse("INVALID_ACTION: IN_PROGRESS without force") },
});
const getDocument = createRoute({
  method: "get",
  path: "/thing-jobs/documents/{jobId}",
  tags,
  summary: "GET_JOB_DOCUMENT of a job",
  request: { params: JobParam },
  responses: jsonResponses(z.object({ document: z.unknown() })),
});

function errorResponse(description: string) {
  return { description, content: { "application/json": { schema: ErrorSchema } } };
}

export const thingJobRoutes: RouteModule<{ thingJobs: JobsService }> = (app, { thingJobs: jobs }) => {
  app.openapi(generateUploadUrl, async (c) => {
    const { documentName, domain } = c.req.valid("json");
    return c.json(await jobs.uploadTicket(c.get("principal"), documentName, domain), 200);
  });

  app.openapi(createJob, async (c) => {
    const job = await jobs.create(c.get("principal"), c.req.valid("json"));
    return c.json({ jobId: job.jobId, domain: job.domain, description: job.description }, 200);
  });

  app.openapi(cancelJob, async (c) => {
    const body = (c.req.valid("json") as { comment?: string } | undefined) ?? {};
    return c.json(await jobs.cancel(c.get("principal"), c.req.valid("param").jobId, body.comment), 200);
  });

  app.openapi(describeJob, async (c) =>
    c.json(await jobs.describe(c.get("principal"), c.req.valid("param").jobId), 200),
  );

  app.openapi(listJobs, async (c) => c.json(await jobs.list(c.get("principal"), c.req.valid("query")), 200));

  app.openapi(listExecutions, async (c) => {
    const status = c.req.valid("query").status;
    // SUCCESS is how the interface's get operation spells SUCCEEDED.
    const wanted = status === "SUCCESS" ? "SUCCEEDED" : (status as ExecutionStatus | undefined);
    return c.json(await jobs.executions(c.get("principal"), c.req.valid("param").jobId, wanted), 200);
  });

  app.openapi(associateTargets, async (c) => {
    const { targets, comment } = c.req.valid("json");
    return c.json(await jobs.associate(c.get("principal"), c.req.valid("param").jobId, targets, comment), 200);
  });

  app.openapi(getExecution, async (c) => {
    const { jobId, thingName } = c.req.valid("param");
    const n = c.req.valid("query").executionNumber;
    return c.json(
      await jobs.execution(c.get("principal"), jobId, thingName, n === undefined ? undefined : Number(n)),
      200,
    );
  });

  app.openapi(cancelExecution, async (c) => {
    const { jobId, thingName } = c.req.valid("param");
    const q = c.req.valid("query");
    const expected = q.expectedVersion === undefined ? undefined : Number(q.expectedVersion);
    await jobs.cancelExecution(c.get("principal"), jobId, thingName, q.force === "true", expected);
    return c.body(null, 200);
  });

  app.openapi(deleteExecution, async (c) => {
    const { jobId, thingName, executionNumber } = c.req.valid("param");
    const force = c.req.valid("query").force === "true";
    await jobs.deleteExecution(c.get("principal"), jobId, thingName, Number(executionNumber), force);
    return c.body(null, 200);
  });

  app.openapi(deleteJob, async (c) => {
    await jobs.delete(c.get("principal"), c.req.valid("param").jobId, c.req.valid("query").force === "true");
    return c.body(null, 200);
  });

  app.openapi(getDocument, async (c) =>
    c.json({ document: await jobs.document(c.get("principal"), c.req.valid("param").jobId) }, 200),
  );

  // The signed PUT of a job document: no credentials, the URL's signature is the authority.
  app.put("/storage/job-documents/:documentId", async (c) => {
    await jobs.upload({
      documentId: c.req.param("documentId"),
      request: c.req.raw,
      contentType: c.req.header("content-type"),
      contentLength: c.req.header("content-length"),
      body: () => c.req.arrayBuffer(),
    });
    return c.body(null, 200);
  });
};
