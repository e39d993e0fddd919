import type { ActionType } from "../rule-model/index.js";
import type { RulePayload, TriggeredAction } from "../engine/index.js";
import type { DeliveryStatus, StoredDelivery } from "./store.js";

/** A delivery as both SQL stores hold it in `action_outbox`: config and payload as JSON text, times in epoch ms. */
export interface DeliveryRow {
  id: number;
  idempotency_key: string;
  rule_id: string;
  rule_domain: string;
  thing_name: string;
  type: ActionType;
  config: string;
  payload: string;
  status: DeliveryStatus;
  attempts: number;
  next_attempt_at: number;
  last_error: string | null;
  created_at: number;
  updated_at: number;
  claimed_by: string | null;
  lease_until: number | null;
}

/** The columns an accepted action fills, in the order both stores insert them. */
export function acceptedColumns(a: TriggeredAction): [string, string, string, string, ActionType, string, string] {
  return [
    a.idempotencyKey,
    a.ruleId,
    a.payload.rule.domain,
    a.thingName,
    a.type,
    JSON.stringify(a.config),
    JSON.stringify(a.payload),
  ];
}

export function toDelivery(r: DeliveryRow): StoredDelivery {
  return {
    id: r.id,
    idempotencyKey: r.idempotency_key,
    ruleId: r.rule_id,
    ruleDomain: r.rule_domain,
    thingName: r.thing_name,
    type: r.type,
    config: JSON.parse(r.config) as Record<string, unknown>,
    payload: JSON.parse(r.payload) as RulePayload,
    status: r.status,
    attempts: r.attempts,
    nextAttemptAt: r.next_attempt_at,
    lastError: r.last_error,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    claimedBy: r.claimed_by,
    leaseUntil: r.lease_until,
  };
}
