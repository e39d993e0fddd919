import { z } from "zod";

/**
 * The thing-job resources of the interface, one source: REST validates and documents with these
 * schemas, and the TypeScript types of src/jobs are inferred from them (src/jobs/types.ts).
 */

export const JOB_STATUSES = ["IN_PROGRESS", "CANCELED", "COMPLETED"] as const;
export const TARGET_SELECTIONS = ["CONTINUOUS", "SNAPSHOT"] as const;
export const EXECUTION_STATUSES = [
  "QUEUED",
  "IN_PROGRESS",
  "SUCCEEDED",
  "FAILED",
  "REJECTED",
  "TIMED_OUT",
  "REMOVED",
  "CANCELED",
] as const;
/** What a device may report (AWS IoT Jobs UpdateJobExecution). */
export const DEVICE_STATUSES = ["IN_PROGRESS", "SUCCEEDED", "FAILED", "REJECTED"] as const;
export const FAILURE_TYPES = ["FAILED", "REJECTED", "TIMED_OUT", "ALL"] as const;

export const TargetsSchema = z.object({ groups: z.array(z.string()), things: z.array(z.string()) });

export const AbortConfigSchema = z.object({
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

export const TimeoutConfigSchema = z.object({
  inProgressTimeoutInMinutes: z.number().int().min(1).max(10080).optional(),
});

/** CREATE's body. */
export const NewJobSchema = z.object({
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
});

export const JobProcessDetailsSchema = z.object({
  numberOfCanceledThings: z.number().int(),
  numberOfFailedThings: z.number().int(),
  numberOfInProgressThings: z.number().int(),
  numberOfQueuedThings: z.number().int(),
  numberOfRejectedThings: z.number().int(),
  numberOfRemovedThings: z.number().int(),
  numberOfSucceededThings: z.number().int(),
  numberOfTimedOutThings: z.number().int(),
  processingTargets: TargetsSchema,
});

/** DESCRIBE's answer. */
export const ThingJobSchema = z.object({
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
  jobProcessDetails: JobProcessDetailsSchema,
  maximumPerMinute: z.number().int().optional(),
  timeoutConfig: TimeoutConfigSchema.optional(),
  abortConfig: AbortConfigSchema.optional(),
  jobDocumentId: z.string(),
});

/** An item of LIST. */
export const ThingJobListItemSchema = z.object({
  jobId: z.string(),
  status: z.enum(JOB_STATUSES),
  targetSelection: z.enum(TARGET_SELECTIONS),
  lastUpdatedAt: z.string(),
  completedAt: z.string().optional(),
  canceledAt: z.string().optional(),
});

/** GET_JOB_EXECUTION's answer. */
export const JobExecutionSchema = z.object({
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
});

/** An item of LIST_JOB_EXECUTIONS. */
export const JobExecutionSummaryItemSchema = z.object({
  jobId: z.string(),
  thingName: z.string(),
  jobExecutionSummary: z.object({
    status: z.enum(EXECUTION_STATUSES),
    queuedAt: z.number().int(),
    startedAt: z.number().int().optional(),
    lastUpdatedAt: z.number().int(),
    executionNumber: z.string(),
  }),
});
