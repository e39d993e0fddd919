export const CLASSIFICATIONS = ["WARNING", "INTERNAL", "ALARM", "NOTIFICATION"] as const;
export type Classification = (typeof CLASSIFICATIONS)[number];

/** An event as `GET /events` answers it and as it is produced to the events topic. */
export interface EventRecord {
  id: string;
  ruleId: string;
  category?: string;
  thingName: string;
  thingType: string;
  domain: string;
  classification: Classification;
  message: string;
  acknowledgmentRequired: boolean;
  acknowledged: boolean;
  acknowledgedAt?: string;
  acknowledgedBy?: string;
  /** When the rule triggered, ISO 8601 with milliseconds. */
  time: string;
}

export interface NewEvent {
  idempotencyKey: string;
  ruleId: string;
  category?: string | undefined;
  thingName: string;
  thingType: string;
  domain: string;
  classification: Classification;
  message: string;
  acknowledgmentRequired: boolean;
  /** Epoch ms. */
  time: number;
}

export interface EventQuery {
  /** Only events of these domains (the caller's `Events.READ` domains). */
  domains: readonly string[];
  thingName?: string | undefined;
  category?: string | undefined;
  classification?: Classification | undefined;
  /** Epoch ms, inclusive. */
  from?: number | undefined;
  to?: number | undefined;
  acknowledged?: boolean | undefined;
  size: number;
  /** The `nextMarker` of the previous page: events older than it. */
  marker?: number | undefined;
}

/**
 * Where events made by EVENT actions are kept, newest first. Every method
 * answers asynchronously, as a networked database would.
 */
export interface EventStore {
  /** Stores the event once per idempotency key; answers the stored event and whether it is new. */
  insert(e: NewEvent): Promise<{ event: EventRecord; created: boolean }>;
  get(id: string): Promise<EventRecord | undefined>;
  /** Acknowledges once: a second ack keeps the first time and user. undefined: no such event. */
  acknowledge(id: string, userName: string): Promise<EventRecord | undefined>;
  /** One page of events, newest first, and the marker of the next page when there is one. */
  list(q: EventQuery): Promise<{ events: EventRecord[]; nextMarker?: string }>;
  /** Deletes up to `limit` events that triggered before `cutoff` (epoch ms), oldest first; answers how many. */
  deleteOlderThan(cutoff: number, limit: number): Promise<number>;
}
