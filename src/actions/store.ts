import type { ActionType } from "../rule-model/index.js";
import type { RulePayload, TriggeredAction } from "../engine/index.js";

export type DeliveryStatus = "pending" | "delivering" | "delivered" | "dead";

/** A delivery as the outbox keeps it: the action as triggered and how far its delivery got. */
export interface StoredDelivery {
  id: number;
  idempotencyKey: string;
  ruleId: string;
  /** The rule's domain, so dead letters are listed to those who may read the rule. */
  ruleDomain: string;
  thingName: string;
  type: ActionType;
  /** The action config as the rule held it, before substitution. */
  config: Record<string, unknown>;
  payload: RulePayload;
  status: DeliveryStatus;
  attempts: number;
  /** Epoch ms; the due time of a pending delivery. */
  nextAttemptAt: number;
  lastError: string | null;
  createdAt: number;
  updatedAt: number;
}

/** What an attempt (or a retry by hand) leaves of a delivery. */
export interface Settlement {
  status: DeliveryStatus;
  attempts: number;
  nextAttemptAt: number;
  lastError: string | null;
}

/**
 * Where the outbox keeps triggered actions until they are delivered, and those
 * that gave up (its dead letters). Every method answers asynchronously, as a
 * networked database would.
 */
export interface OutboxStore {
  /**
   * Adds the actions as pending, due at `now`, in one transaction; an action whose
   * idempotency key is known is dropped (a replayed observation hands it again).
   * Resolves once they are durable: the engine awaits it before its state is
   * flushed and its source commits, so a crash in between replays the batch and
   * loses no action. SQLite writes before resolving; a PostgreSQL store resolves
   * after the COMMIT of one `INSERT ... ON CONFLICT (idempotency_key) DO NOTHING`.
   */
  accept(actions: readonly TriggeredAction[], now: number): Promise<void>;
  /**
   * Marks the `limit` earliest due of the deliveries pending at `now` as delivering
   * and answers them, in no particular order. (A PostgreSQL store shared by several
   * processes would pick them `FOR UPDATE SKIP LOCKED`, so no two take the same one.)
   */
  claim(now: number, limit: number): Promise<StoredDelivery[]>;
  /** When the earliest pending delivery is due; undefined: none is pending. */
  nextDue(): Promise<number | undefined>;
  settle(id: number, outcome: Settlement, now: number): Promise<void>;
  /** Makes every delivering delivery pending again: at start nothing is in flight, so what was goes again. */
  releaseClaims(): Promise<void>;
  /** Forgets delivered deliveries last changed before `before`; answers how many. */
  pruneDelivered(before: number): Promise<number>;
  get(id: number): Promise<StoredDelivery | undefined>;
  /** Dead letters of rules in `domains` below id `before` (all when undefined), newest first, at most `limit`. */
  deadLetters(domains: readonly string[], limit: number, before?: number): Promise<StoredDelivery[]>;
  /** Deliveries pending or under way. */
  countWaiting(): Promise<number>;
  countDead(): Promise<number>;
  /** When the oldest delivery pending or under way was triggered; undefined: none. */
  oldestWaiting(): Promise<number | undefined>;
}
