export { ThingJobs, MAX_TARGETS, type TargetAccess, type PendingListener } from "./jobs.js";
export type {
  JobStore,
  StoredJob,
  StoredExecution,
  NewStoredJob,
  ExecutionChange,
  StoredJobDocument,
  NewJobDocument,
  ReachedExecution,
} from "./store.js";
export { SqliteJobStore } from "./sqlite-store.js";
export { PgJobStore } from "./pg-store.js";
export { JobDocuments, MAX_DOCUMENT_BYTES, DOCUMENT_PATH_PREFIX, type UploadTicket } from "./documents.js";
export { DeviceJobs, type DeviceMessage, type DeviceErrorCode } from "./device.js";
export { JobScheduler } from "./scheduler.js";
export { jobsMigrations, jobsPgMigrations, FINISHED_SQL } from "./migrations.js";
export * from "./types.js";
export {
  NewJobSchema,
  ThingJobSchema,
  ThingJobListItemSchema,
  JobExecutionSchema,
  JobExecutionSummaryItemSchema,
} from "./schema.js";
export { JobsService, type JobRef } from "./service.js";
export { createJobs, type Jobs, type JobsDeps } from "./create.js";
