import type { z } from "zod";
import { EXECUTION_STATUSES } from "./schema.js";
import type {
  AbortConfigSchema,
  DEVICE_STATUSES,
  FAILURE_TYPES,
  JOB_STATUSES,
  JobExecutionSchema,
  JobExecutionSummaryItemSchema,
  JobProcessDetailsSchema,
  NewJobSchema,
  TARGET_SELECTIONS,
  TargetsSchema,
  ThingJobListItemSchema,
  ThingJobSchema,
  TimeoutConfigSchema,
} from "./schema.js";

/** The thing-job resources of the interface as TypeScript types, inferred from their schemas (schema.ts). */

export { JOB_STATUSES, TARGET_SELECTIONS, EXECUTION_STATUSES, DEVICE_STATUSES, FAILURE_TYPES } from "./schema.js";

export type JobStatus = (typeof JOB_STATUSES)[number];
export type TargetSelection = (typeof TARGET_SELECTIONS)[number];
export type ExecutionStatus = (typeof EXECUTION_STATUSES)[number];
export type DeviceStatus = (typeof DEVICE_STATUSES)[number];
export type FailureType = (typeof FAILURE_TYPES)[number];

/** Statuses an execution never leaves: all but QUEUED and IN_PROGRESS. */
export const TERMINAL: ReadonlySet<ExecutionStatus> = new Set(
  EXECUTION_STATUSES.filter((s) => s !== "QUEUED" && s !== "IN_PROGRESS"),
);

export type AbortConfig = z.infer<typeof AbortConfigSchema>;
export type AbortCriteria = AbortConfig["criteriaList"][number];
export type TimeoutConfig = z.infer<typeof TimeoutConfigSchema>;
export type Targets = z.infer<typeof TargetsSchema>;
export type JobProcessDetails = z.infer<typeof JobProcessDetailsSchema>;
export type ThingJob = z.infer<typeof ThingJobSchema>;
export type ThingJobListItem = z.infer<typeof ThingJobListItemSchema>;
export type JobExecution = z.infer<typeof JobExecutionSchema>;
export type JobExecutionSummaryItem = z.infer<typeof JobExecutionSummaryItemSchema>;
export type NewJob = z.infer<typeof NewJobSchema>;
