/** The shapes of dms's REST answers that the console reads. */
import type { Rule as RuleDocument } from "../../src/rule-model/index.js";

export interface Thing {
  thingName: string;
  thingType: string;
  domain: string;
  label?: string;
  serial?: string;
}

export interface ResourceDefinition {
  name: string;
  dataType: string;
  resourceType: string;
}

export interface ThingType {
  id: string;
  label: string;
  domain: string;
  resources: ResourceDefinition[];
}

export type { ActionItem as RuleAction } from "../../src/rule-model/index.js";

/** A rule as the list and get operations answer it: the stored document and whether the caller may change it. */
export type Rule = RuleDocument & { readonly?: boolean };

export interface DmsEvent {
  id: string;
  ruleId: string;
  category?: string;
  thingName: string;
  thingType: string;
  domain: string;
  classification: string;
  message: string;
  acknowledgmentRequired?: boolean;
  acknowledgedAt?: string;
  acknowledgedBy?: string;
  time: string;
}

export interface Delivery {
  id: string;
  ruleId: string;
  thingName: string;
  type: string;
  status: string;
  attempts?: number;
  lastError?: string;
  createdAt: string;
  updatedAt: string;
}

export interface ObservationDeadLetter {
  id: string;
  source: string;
  thingName?: string;
  reason: string;
  message: string;
  createdAt: string;
}

export interface PageInfo {
  hasNext: boolean;
  nextMarker?: string;
}

export interface JobSummary {
  jobId: string;
  status: string;
  targetSelection: string;
  lastUpdatedAt?: string;
}

export interface JobDetails extends JobSummary {
  description: string;
  comment?: string;
  targets: { groups: string[]; things: string[] };
  jobProcessDetails: Record<string, number | unknown>;
}

export interface ExecutionSummary {
  jobId: string;
  thingName: string;
  jobExecutionSummary: { status: string; executionNumber: string; lastUpdatedAt?: string | number };
}

export interface Observation {
  timestamp: number | string;
  thingName: string;
  state: Record<string, unknown>;
}

export interface DryRunResult {
  index: number;
  thingName: string;
  inFilter: boolean;
  matched: boolean;
  expressions: { operator: string; resource: string; matched: boolean }[];
  triggered: boolean;
  actions?: { type: string; config: Record<string, unknown> }[];
}
