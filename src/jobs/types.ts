/** The thing-job resources of the interface, as TypeScript types. */

export const JOB_STATUSES = ["IN_PROGRESS", "CANCELED", "COMPLETED"] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

export const TARGET_SELECTIONS = ["CONTINUOUS", "SNAPSHOT"] as const;
export type TargetSelection = (typeof TARGET_SELECTIONS)[number];

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
export type ExecutionStatus = (typeof EXECUTION_STATUSES)[number];

/** Statuses an execution never leaves. */
export const TERMINAL: ReadonlySet<ExecutionStatus> = new Set([
  "SUCCEEDED",
  "FAILED",
  "REJECTED",
  "TIMED_OUT",
  "REMOVED",
  "CANCELED",
]);

/** What a device may report (AWS IoT Jobs UpdateJobExecution). */
export const DEVICE_STATUSES = ["IN_PROGRESS", "SUCCEEDED", "FAILED", "REJECTED"] as const;
export type DeviceStatus = (typeof DEVICE_STATUSES)[number];

export const FAILURE_TYPES = ["FAILED", "REJECTED", "TIMED_OUT", "ALL"] as const;
export type FailureType = (typeof FAILURE_TYPES)[number];

export interface AbortCriteria {
  failureType: FailureType;
  action: "CANCEL";
  thresholdPercentage: number;
  minNumberOfExecutedThings: number;
}

export interface AbortConfig {
  criteriaList: AbortCriteria[];
}

export interface TimeoutConfig {
  inProgressTimeoutInMinutes?: number | undefined;
}

export interface Targets {
  groups: string[];
  things: string[];
}

export interface JobProcessDetails {
  numberOfCanceledThings: number;
  numberOfFailedThings: number;
  numberOfInProgressThings: number;
  numberOfQueuedThings: number;
  numberOfRejectedThings: number;
  numberOfRemovedThings: number;
  numberOfSucceededThings: number;
  numberOfTimedOutThings: number;
  processingTargets: Targets;
}

export interface ThingJob {
  jobId: string;
  domain: string;
  description: string;
  comment?: string;
  status: JobStatus;
  targetSelection: TargetSelection;
  createdAt: string;
  lastUpdatedAt: string;
  completedAt?: string;
  canceledAt?: string;
  targets: Targets;
  jobProcessDetails: JobProcessDetails;
  maximumPerMinute?: number;
  timeoutConfig?: TimeoutConfig;
  abortConfig?: AbortConfig;
  jobDocumentId: string;
}

export interface ThingJobListItem {
  jobId: string;
  status: JobStatus;
  targetSelection: TargetSelection;
  lastUpdatedAt: string;
  completedAt?: string;
  canceledAt?: string;
}

export interface JobExecution {
  jobId: string;
  thingName: string;
  status: ExecutionStatus;
  queuedAt: number;
  startedAt?: number;
  lastUpdatedAt: number;
  executionNumber: string;
  versionNumber: number;
  statusDetails?: Record<string, string>;
  forceCanceled: boolean;
  approximateSecondsBeforeTimedOut?: number;
}

export interface JobExecutionSummaryItem {
  jobId: string;
  thingName: string;
  jobExecutionSummary: {
    status: ExecutionStatus;
    queuedAt: number;
    startedAt?: number;
    lastUpdatedAt: number;
    executionNumber: string;
  };
}

export interface NewJob {
  domain: string;
  description: string;
  jobDocumentId: string;
  targets: { things?: string[] | undefined; groups?: string[] | undefined };
  targetSelection: TargetSelection;
  maximumPerMinute?: number | undefined;
  timeoutConfig?: TimeoutConfig | undefined;
  abortConfig?: AbortConfig | undefined;
}
