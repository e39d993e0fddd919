import { createRoute, z } from "@hono/zod-openapi";
import { authorize, requireReadWrite, type Identity, type Principal } from "../../auth/index.js";
import { ApiError, notAuthorized, notFound } from "../../errors/index.js";
import {
  EXECUTION_STATUSES,
  FAILURE_TYPES,
  JOB_STATUSES,
  TARGET_SELECTIONS,
  type ExecutionStatus,
  type ThingJobs,
} from "../../jobs/index.js";
import type { ThingRegistry } from "../../things/index.js";
import type { Api, RouteModule } from "../context.js";
import { emptyResponses, ErrorSchema, jsonBody, jsonResponses } from "../openapi.js";

const tags = ["thing jobs"];
const digits = z.string().regex(/^\d{1,15}$/, "a string of digits");
const force = z.enum(["true", "false"]).default("false");

const TargetsSchema = z.object({ groups: z.array(z.string()), things: z.array(z.string()) });
const AbortConfigSchema = z.object({
  criteriaList: z
    .array(
      z.object({
        failureType: z.enum(FAILURE_TYPES),
        action: z.literal("CANCEL"),
        thresholdPercentage: z.number().min(0).max(100),
        minNumberOfExecutedThings: z.number().int().min(1),
      }),
    )
    .min(1),
});
const TimeoutConfigSchema = z.object({ inProgressTimeoutInMinutes: z.number().int().min(1).max(10080).optional() });

const ThingJobSchema = z
  .object({
    jobId: z.string(),
    domain: z.string(),
    description: z.string(),
    comment: z.string().optional(),
    status: z.enum(JOB_STATUSES),
    targetSelection: z.enum(TARGET_SELECTIONS),
    createdAt: z.string(),
    lastUpdatedAt: z.string(),
    completedAt: z.string().optional(),
    canceledAt: z.string().optional(),
    targets: TargetsSchema,
    jobProcessDetails: z.object({
      numberOfCanceledThings: z.number().int(),
      numberOfFailedThings: z.number().int(),
      numberOfInProgressThings: z.number().int(),
      numberOfQueuedThings: z.number().int(),
      numberOfRejectedThings: z.number().int(),
      numberOfRemovedThings: z.number().int(),
      numberOfSucceededThings: z.number().int(),
      numberOfTimedOutThings: z.number().int(),
      processingTargets: TargetsSchema,
    }),
    maximumPerMinute: z.number().int().optional(),
    timeoutConfig: TimeoutConfigSchema.optional(),
    abortConfig: AbortConfigSchema.optional(),
    jobDocumentId: z.string(),
  })
  .openapi("ThingJob");

const ExecutionSchema = z
  .object({
    jobId: z.string(),
    thingName: z.string(),
    status: z.enum(EXECUTION_STATUSES),
    queuedAt: z.number().int(),
    startedAt: z.number().int().optional(),
    lastUpdatedAt: z.number().int(),
    executionNumber: z.string(),
    versionNumber: z.number().int(),
    statusDetails: z.record(z.string(), z.string()).optional(),
    forceCanceled: z.boolean(),
    approximateSecondsBeforeTimedOut: z.number().int().optional(),
  })
  .openapi("JobExecution");

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
  request: jsonBody(
    z.object({
      domain: z.string().min(1),
      description: z.string().max(2028),
      jobDocumentId: z.string().min(1),
      targets: z.object({
        things: z.array(z.string().min(1)).optional(),
        groups: z.array(z.string().min(1)).optional(),
      }),
      targetSelection: z.enum(TARGET_SELECTIONS),
      maximumPerMinute: z.number().int().min(1).max(1000).optional(),
      timeoutConfig: TimeoutConfigSchema.optional(),
      abortConfig: AbortConfigSchema.optional(),
    }),
  ),
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
  responses: jsonResponses(ThingJobSchema),
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
  responses: jsonResponses(
    z.array(
      z.object({
        jobId: z.string(),
        status: z.enum(JOB_STATUSES),
        targetSelection: z.enum(TARGET_SELECTIONS),
        lastUpdatedAt: z.string(),
        completedAt: z.string().optional(),
        canceledAt: z.string().optional(),
      }),
    ),
  ),
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
  responses: jsonResponses(
    z.array(
      z.object({
        jobId: z.string(),
        thingName: z.string(),
        jobExecutionSummary: z.object({
          status: z.enum(EXECUTION_STATUSES),
          queuedAt: z.number().int(),
          startedAt: z.number().int().optional(),
          lastUpdatedAt: z.number().int(),
          executionNumber: z.string(),
        }),
      }),
    ),
  ),
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
  responses: jsonResponses(ExecutionSchema),
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

export const thingJobRoutes: RouteModule<{ jobs: ThingJobs; identity: Identity; registry: ThingRegistry }> = (
  app,
  { jobs, identity, registry },
) => {
  /** The job, after the caller's privilege on its domain (the domain of its job document). */
  const jobFor = (principal: Principal, jobId: string, privilege: "READ" | "UPDATE" | "DELETE") => {
    const job = jobs.requireJob(jobId);
    if (privilege !== "READ") requireReadWrite(principal);
    authorize(principal, `ThingJobs.${privilege}`, job.domain);
    return job;
  };

  app.openapi(generateUploadUrl, (c) => {
    const { documentName, domain } = c.req.valid("json");
    const principal = c.get("principal");
    requireReadWrite(principal);
    if (!identity.domain(domain))
      throw new ApiError("NOT_AUTHORIZED_DOMAIN", `Domain ${domain} does not exist`, "domain");
    authorize(principal, "ThingJobs.CREATE", domain);
    return c.json(jobs.documents.createTicket(documentName, domain), 200);
  });

  app.openapi(createJob, (c) => {
    const body = c.req.valid("json");
    const principal = c.get("principal");
    requireReadWrite(principal);
    authorize(principal, "ThingJobs.CREATE", body.domain);
    authorize(principal, "ThingJobs.READ", body.domain);
    if (body.targets.groups?.length) authorize(principal, "ThingGroups.READ", body.domain);
    if (body.targets.things?.length) authorize(principal, "Things.READ", body.domain);
    const job = jobs.create(body, {
      thing: (d) => principal.can("Things.READ", d),
      group: (d) => principal.can("ThingGroups.READ", d),
    });
    return c.json({ jobId: job.jobId, domain: job.domain, description: job.description }, 200);
  });

  app.openapi(cancelJob, (c) => {
    const job = jobFor(c.get("principal"), c.req.valid("param").jobId, "UPDATE");
    const body = (c.req.valid("json") as { comment?: string } | undefined) ?? {};
    jobs.cancel(job.job_id, body.comment);
    return c.json({ jobId: job.job_id, description: job.description }, 200);
  });

  app.openapi(describeJob, (c) => {
    const job = jobFor(c.get("principal"), c.req.valid("param").jobId, "READ");
    return c.json(jobs.describe(job.job_id), 200);
  });

  app.openapi(listJobs, (c) => {
    const query = c.req.valid("query");
    const principal = c.get("principal");
    const readable = new Set(
      identity
        .domains()
        .filter((d) => principal.can("ThingJobs.READ", d.id))
        .map((d) => d.id),
    );
    if (readable.size === 0) throw notAuthorized(`User ${principal.userName} holds ThingJobs.READ on no domain`);
    let groupId: string | undefined;
    if (query.group !== undefined) {
      const group = registry.group(query.group);
      if (!group) throw notFound("THING_GROUP_NOT_FOUND", `Thing group ${query.group}`, "group");
      authorize(principal, "ThingGroups.READ", group.domain);
      groupId = group.id;
    }
    return c.json(jobs.list(readable, { status: query.status, targetSelection: query.targetSelection, groupId }), 200);
  });

  app.openapi(listExecutions, (c) => {
    const job = jobFor(c.get("principal"), c.req.valid("param").jobId, "READ");
    const status = c.req.valid("query").status;
    return c.json(jobs.executions(job.job_id, status === "SUCCESS" ? "SUCCEEDED" : (status as ExecutionStatus)), 200);
  });

  app.openapi(associateTargets, (c) => {
    const principal = c.get("principal");
    const job = jobFor(principal, c.req.valid("param").jobId, "UPDATE");
    const { targets, comment } = c.req.valid("json");
    jobs.associate(job.job_id, targets, comment, (d) => principal.can("ThingGroups.READ", d));
    return c.json({ jobId: job.job_id, description: job.description }, 200);
  });

  app.openapi(getExecution, (c) => {
    const { jobId, thingName } = c.req.valid("param");
    const job = jobFor(c.get("principal"), jobId, "READ");
    const n = c.req.valid("query").executionNumber;
    return c.json(jobs.execution(job.job_id, thingName, n === undefined ? undefined : Number(n)), 200);
  });

  app.openapi(cancelExecution, (c) => {
    const { jobId, thingName } = c.req.valid("param");
    const job = jobFor(c.get("principal"), jobId, "UPDATE");
    const q = c.req.valid("query");
    jobs.cancelExecution(
      job.job_id,
      thingName,
      q.force === "true",
      q.expectedVersion === undefined ? undefined : Number(q.expectedVersion),
    );
    return c.body(null, 200);
  });

  app.openapi(deleteExecution, (c) => {
    const { jobId, thingName, executionNumber } = c.req.valid("param");
    const job = jobFor(c.get("principal"), jobId, "DELETE");
    jobs.deleteExecution(job.job_id, thingName, Number(executionNumber), c.req.valid("query").force === "true");
    return c.body(null, 200);
  });

  app.openapi(deleteJob, (c) => {
    const job = jobFor(c.get("principal"), c.req.valid("param").jobId, "DELETE");
    jobs.delete(job.job_id, c.req.valid("query").force === "true");
    return c.body(null, 200);
  });

  app.openapi(getDocument, (c) => {
    const job = jobFor(c.get("principal"), c.req.valid("param").jobId, "READ");
    return c.json({ document: jobs.documentOf(job.job_id) }, 200);
  });

  registerUpload(app, jobs);
};

/** The signed PUT of a job document: no credentials, the URL's signature is the authority. */
function registerUpload(app: Api, jobs: ThingJobs): void {
  app.put("/storage/job-documents/:documentId", async (c) => {
    await jobs.documents.upload({
      documentId: c.req.param("documentId"),
      request: c.req.raw,
      contentType: c.req.header("content-type"),
      contentLength: c.req.header("content-length"),
      body: () => c.req.arrayBuffer(),
    });
    return c.body(null, 200);
  });
}
