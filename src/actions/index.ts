import type { ActionType } from "../rule-model/index.js";

export type { ActionType };

// The engine's side of the hand-over (what it triggers, where it hands it) is defined beside the engine;
// the outbox implements `ActionSink`.
export type { ActionSink, RulePayload, TriggeredAction } from "../engine/index.js";

export { Outbox, DEFAULT_CONCURRENCY, type OutboxOptions, type DeliveryRecord } from "./outbox.js";
export type { OutboxStore, StoredDelivery, Settlement, DeliveryStatus, Claim } from "./store.js";
export { SqliteOutboxStore } from "./sqlite-store.js";
export { PgOutboxStore } from "./pg-store.js";
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
export {
  parseTemplate,
  substitute,
  strings,
  template,
  templateCacheSize,
  Template,
  TemplateError,
  TEMPLATE_CACHE_MAX,
  TEMPLATE_CACHE_MAX_BYTES,
  type Scope,
} from "./template.js";
export { payloadScope } from "./scope.js";
export { realTimers, type Timers } from "./timers.js";
export { addressProblem, hostAddresses, isPrivateAddress, isPrivateHost, normalHost, publicOnlyLookup } from "./net.js";
export { webhookDnsProblem } from "./webhook.js";
export { splitResource, RESERVED_TYPES } from "./set-resource.js";
export { truncate, SMS_MAX_LENGTH } from "./sms.js";
export { actionsMigrations, actionsPgMigrations } from "./migrations.js";
