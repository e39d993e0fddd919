export const EXECUTION_STATUSES = ["QUEUED", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED"] as const;
export type ExecutionStatus = (typeof EXECUTION_STATUSES)[number];

/** An export job as the interface shows it. */
export interface ExportJob {
  id: string;
  jobName: string;
  type: "scheduled" | "instant";
  thingType?: string;
  thingTypeLabel?: string;
  things?: string[];
  from?: string;
  to?: string;
  schedule?: string;
  timePeriod?: string;
  resources: string[];
  enabled?: boolean;
  notifyByEmail?: boolean;
  recipients?: string;
  createdAt: string;
  updatedAt: string;
}

/** An export job execution with the fields only the service uses. */
export interface ExportExecution {
  id: string;
  jobId: string;
  owner: string;
  status: ExecutionStatus;
  submissionDateTime: string;
  completionDateTime: string;
  dataScannedInBytes: number;
  engineExecutionTimeInMillis: number;
  executionFileName: string;
  /** The window exported, epoch ms, `to` exclusive. */
  windowFrom: number;
  windowTo: number;
  seq: number;
}

export type ExecutionSummary = Pick<
  ExportExecution,
  "id" | "jobId" | "status" | "submissionDateTime" | "completionDateTime" | "dataScannedInBytes"
>;

export interface PageInfo {
  itemCount: number;
  size: number;
  marker?: string;
  hasNext: boolean;
  nextMarker?: string;
}

export interface ListQuery {
  size: number;
  marker?: number;
  order: "asc" | "desc";
}
