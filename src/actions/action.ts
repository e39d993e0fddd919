import type { z } from "zod";
import type { Config } from "../config/index.js";
import type { ObservationIngest } from "../engine/index.js";
import type { EventPublisher, EventStore } from "../events/index.js";
import type { Mailer } from "../mail/index.js";
import type { Logger } from "../observability/index.js";
import type { ActionType } from "../rule-model/index.js";
import type { RulePayload } from "../engine/index.js";
import type { Timers } from "./timers.js";

/** Retry settings of one action: `interval` seconds before retry 1, times `backOffRate` for each next one. */
export interface RetryPolicy {
  interval: number;
  /** Retries after the first attempt. */
  maxAttempts: number;
  backOffRate: number;
}

/** The webhook defaults of the interface; the other action types use them too. */
export const DEFAULT_RETRY: RetryPolicy = { interval: 3, maxAttempts: 3, backOffRate: 2 };

/** Seconds to wait before retry `n` (1-based): `interval * backOffRate^(n-1)`. */
export function retryDelaySeconds(policy: RetryPolicy, n: number): number {
  return policy.interval * policy.backOffRate ** (n - 1);
}

/** One attempt to deliver an action, with its config already substituted. */
export interface Delivery<C> {
  id: number;
  idempotencyKey: string;
  ruleId: string;
  thingName: string;
  /** 1 for the first attempt. */
  attempt: number;
  config: C;
  payload: RulePayload;
}

/** What action types may use to deliver. */
export interface ActionDeps {
  config: Config;
  logger: Logger;
  mailer: Mailer;
  /**
   * Where SET_RESOURCE feeds back: the observations topic with Kafka, else this process's engine;
   * undefined without either.
   */
  ingest: () => ObservationIngest | undefined;
  events: EventStore;
  publisher: EventPublisher;
  timers: Timers;
}

export interface ValidationOptions {
  allowPrivateWebhooks: boolean;
}

/**
 * One action type: how its config is validated when a rule is saved, how
 * often it is retried, and how it is delivered. Every type has this shape.
 */
export interface ActionDefinition<C> {
  type: ActionType;
  /** The raw config as a rule holds it (strings may carry `${...}`). */
  schema(options: ValidationOptions): z.ZodType<C>;
  retry(config: C): RetryPolicy;
  /** Prepared once per process; the returned function runs per delivery. */
  create(deps: ActionDeps): (delivery: Delivery<C>) => Promise<void>;
}

/** A failure that retrying cannot fix (a refused target, a config that substitutes to nonsense). */
export class PermanentFailure extends Error {}

/** Not a failure: the action may not go before `until` (epoch ms), e.g. the SMS rate limit. */
export class Deferred extends Error {
  constructor(readonly until: number) {
    super(`deferred until ${new Date(until).toISOString()}`);
  }
}

/** Erases the config type so definitions of all types fit one registry. */
export function defineAction<C>(definition: ActionDefinition<C>): ActionDefinition<Record<string, unknown>> {
  return definition as unknown as ActionDefinition<Record<string, unknown>>;
}
