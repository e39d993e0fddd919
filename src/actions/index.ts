import type { ActionType } from "../rules/index.js";

export type { ActionType };

/** The rule engine payload: what `${...}` substitution and `includeAllEventData` see. */
export interface RulePayload {
  rule: { id: string; name: string; category?: string; domain: string };
  thing: { thingName: string; thingType: string; domain: string; state: Record<string, unknown> };
  observation: {
    id: string;
    timestamp: number;
    state: Record<string, unknown>;
    nested?: { type?: string; id?: string; state: Record<string, unknown> }[];
  };
  /** When the rule triggered, epoch ms and ISO 8601. */
  timestamp: number;
  isoTimestamp: string;
}

/** One action a rule triggered. */
export interface TriggeredAction {
  /** `${ruleId}:${thingName}:${observationId}:${actionIndex}`: duplicates by key are dropped. */
  idempotencyKey: string;
  ruleId: string;
  thingName: string;
  type: ActionType;
  /** The action config as the rule holds it; the sink substitutes `${...}` before delivery. */
  config: Record<string, unknown>;
  payload: RulePayload;
}

/**
 * Where the engine hands triggered actions. `accept` resolves once the actions
 * are durable (in the outbox); only then may the source commit its offsets.
 */
export interface ActionSink {
  accept(actions: readonly TriggeredAction[]): Promise<void>;
}

export { Outbox, DEFAULT_CONCURRENCY, type OutboxOptions, type DeliveryRecord, type DeliveryStatus } from "./outbox.js";
export {
  DEFAULT_RETRY,
  retryDelaySeconds,
  PermanentFailure,
  Deferred,
  type RetryPolicy,
  type ActionDeps,
  type ActionDefinition,
  type Delivery,
  type ValidationOptions,
} from "./action.js";
export { ACTION_DEFINITIONS, checkActionConfig, type ConfigCheck } from "./definitions.js";
export { parseTemplate, substitute, strings, template, Template, TemplateError, type Scope } from "./template.js";
export { payloadScope } from "./scope.js";
export { realTimers, type Timers } from "./timers.js";
export { addressProblem, isPrivateAddress, isPrivateHost } from "./net.js";
export { webhookDnsProblem } from "./webhook.js";
export { splitResource, RESERVED_TYPES } from "./set-resource.js";
export { truncate, SMS_MAX_LENGTH } from "./sms.js";
export { actionsMigrations } from "./migrations.js";
