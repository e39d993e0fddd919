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
  /** The outbox delivering it (its owner name), while delivering. */
  claimedBy: string | null;
  /** Epoch ms until which the owner's claim holds unless renewed; past it, another outbox may take it. */
  leaseUntil: number | null;
}

/** What an attempt (or a retry by hand) leaves of a delivery. */
export interface Settlement {
  status: DeliveryStatus;
  attempts: number;
  nextAttemptAt: number;
  lastError: string | null;
}

/** A claim on due deliveries: who takes them, when, how many at most, and until when its lease holds. */
export interface Claim {
  owner: string;
  now: number;
  limit: number;
  leaseUntil: number;
}

/**
 * Where the outbox keeps triggered actions until they are delivered, and those
 * that gave up (its dead letters). Every method answers asynchronously, as a
 * networked database would. Several outboxes may share one store: each claims
 * deliveries under its owner name with a lease it renews while it delivers, so
 * a delivery is sent by one outbox at a time and one that died leaves its
 * claims to the others once their leases end.
 */
export interface OutboxStore {
  /**
   * Adds the actions as pending, due at `now`, in one transaction; an action whose
   * idempotency key is known is dropped (a replayed observation hands it again).
   * Resolves once they are durable: the engine awaits it before its state is
   * flushed and its source commits, so a crash in between replays the batch and
   * loses no action.
   */
  accept(actions: readonly TriggeredAction[], now: number): Promise<void>;
  /**
   * Marks up to `limit` of the deliveries pending and due at `now`, the earliest due
   * first, as delivering under `owner` until `leaseUntil`, and answers them. Two
   * claims, from this process or another, never take the same delivery.
   */
  claim(claim: Claim): Promise<StoredDelivery[]>;
  /** Extends every claim `owner` holds to `leaseUntil`. */
  renew(owner: string, leaseUntil: number): Promise<void>;
  /** When the earliest pending delivery is due; undefined: none is pending. */
  nextDue(): Promise<number | undefined>;
  /**
   * Records the outcome of an attempt or a retry by hand. With `owner`, only while
   * `owner` still holds the claim (another outbox may have taken it after the lease
   * ended); answers whether it was recorded.
   */
  settle(id: number, outcome: Settlement, now: number, owner?: string): Promise<boolean>;
  /**
   * Makes pending again the delivering deliveries whose lease ended by `now` (their
   * owner died) and, when `owner` is given, those `owner` holds (a process starting
   * under a name has nothing in flight yet). A live owner's claims are left alone.
   * Answers how many.
   */
  releaseClaims(now: number, owner?: string): Promise<number>;
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
