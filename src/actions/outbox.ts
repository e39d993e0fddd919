import { randomUUID } from "node:crypto";
import { LRUCache } from "lru-cache";
import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import type { Logger } from "../observability/index.js";
import type { ActionType } from "../rule-model/index.js";
import { Deferred, PermanentFailure, retryDelaySeconds, type ActionDeps, type Delivery } from "./action.js";
import { ACTION_DEFINITIONS } from "./definitions.js";
import type { ActionSink, TriggeredAction } from "../engine/index.js";
import { payloadScope } from "./scope.js";
import { TemplateError, substitute } from "./template.js";
import type { DeliveryStatus, OutboxStore, StoredDelivery } from "./store.js";
import type { Timers } from "./timers.js";

/** A delivery as the dead-letter API shows it. */
export interface DeliveryRecord {
  id: string;
  idempotencyKey: string;
  ruleId: string;
  thingName: string;
  type: ActionType;
  status: DeliveryStatus;
  attempts: number;
  lastError?: string;
  /** The action config as the rule held it. */
  config: Record<string, unknown>;
  createdAt: string;
  updatedAt: string;
  nextAttemptAt?: string;
}

export interface OutboxOptions {
  store: OutboxStore;
  deps: ActionDeps;
  logger: Logger;
  timers: Timers;
  /** Deliveries in flight at once. */
  concurrency?: number;
  registry?: Registry;
  /**
   * The name this outbox claims deliveries under. A process restarting under the same name takes
   * back at once what it left delivering; by default each outbox has a name of its own.
   */
  owner?: string;
  /** How long a claim holds unless renewed; the owner renews it every third of this while it runs. */
  leaseMs?: number;
}

export const DEFAULT_CONCURRENCY = 64;
/** Long enough that a busy event loop renews in time, short enough that a dead process's claims go again soon. */
export const DEFAULT_LEASE_MS = 30_000;
/**
 * Delivered rows are kept this long so that a replay of the same
 * observations (a Kafka rebalance, a restart before the offset commit)
 * finds their keys and sends nothing twice; then they are pruned.
 */
export const DELIVERED_RETENTION_MS = 7 * 24 * 3600_000;
/** The first wait before the outbox asks its store again after the store failed (a database away); doubled up to the cap. */
const STORE_RETRY_MS = 250;
const STORE_RETRY_MAX_MS = 5000;
/** Rule and variable pairs already logged as unknown; one evicted is logged once more. */
const UNKNOWN_LOG_LIMIT = 10_000;

/**
 * The durable outbox: triggered actions are written in one transaction and
 * deduplicated by idempotency key; a bounded pool of workers delivers the due
 * ones, retries failures on the action's schedule and keeps those that run
 * out of attempts as dead letters. State lives in the store, so a restart picks
 * up whatever was not delivered.
 */
export class Outbox implements ActionSink {
  private readonly store: OutboxStore;
  private readonly timers: Timers;
  private readonly logger: Logger;
  private readonly concurrency: number;
  /** The name this outbox's claims carry. */
  readonly owner: string;
  private readonly leaseMs: number;
  private readonly deliverers: Record<ActionType, (d: Delivery<Record<string, unknown>>) => Promise<void>>;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly unknownLogged = new LRUCache<string, true>({ max: UNKNOWN_LOG_LIMIT });
  private readonly metrics;
  private running = false;
  private pumpQueued = false;
  /** A pump under way (it awaits the store): a kick meanwhile sends it round once more, so two never claim past the pool. */
  private pumping = false;
  private pumpAgain = false;
  private timer: { at: number; cancel: () => void } | undefined;
  /** The store failed the pump's last claim: the wait before the next try, doubled each time it fails again. */
  private storeRetryMs = 0;
  private pruneTimer: NodeJS.Timeout | undefined;
  private leaseTimer: NodeJS.Timeout | undefined;

  constructor(options: OutboxOptions) {
    this.store = options.store;
    this.timers = options.timers;
    this.logger = options.logger;
    this.concurrency = options.concurrency ?? DEFAULT_CONCURRENCY;
    this.owner = options.owner ?? randomUUID();
    this.leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    const deps = options.deps;
    this.deliverers = {
      WEBHOOK: ACTION_DEFINITIONS.WEBHOOK.create(deps),
      EMAIL: ACTION_DEFINITIONS.EMAIL.create(deps),
      SET_RESOURCE: ACTION_DEFINITIONS.SET_RESOURCE.create(deps),
      SMS: ACTION_DEFINITIONS.SMS.create(deps),
      EVENT: ACTION_DEFINITIONS.EVENT.create(deps),
    };
    this.metrics = options.registry && {
      delivered: new Counter({
        name: "dms_actions_attempts_total",
        help: "Action delivery attempts by type and result (delivered, retry, dead, deferred)",
        labelNames: ["type", "result"],
        registers: [options.registry],
      }),
      latency: new Histogram({
        name: "dms_actions_trigger_to_delivery_seconds",
        help: "Time from the rule triggering to a successful delivery",
        labelNames: ["type"],
        buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 30, 300],
        registers: [options.registry],
      }),
      ...this.backlogGauges(options.registry),
    };
  }

  /**
   * The outbox's backlog as `/metrics` reads it, counted when scraped (the status index answers):
   * deliveries waiting or under way, how long the oldest has waited, and the dead letters.
   */
  private backlogGauges(registry: Registry) {
    const store = this.store;
    const timers = this.timers;
    const registers = [registry];
    return {
      depth: new Gauge({
        name: "dms_actions_outbox_depth",
        help: "Deliveries pending or under way in the outbox",
        registers,
        async collect() {
          this.set(await store.countWaiting());
        },
      }),
      oldest: new Gauge({
        name: "dms_actions_outbox_oldest_pending_seconds",
        help: "How long the oldest pending delivery has waited since its rule triggered (0: none)",
        registers,
        async collect() {
          const at = await store.oldestWaiting();
          this.set(at === undefined ? 0 : Math.max(0, (timers.now() - at) / 1000));
        },
      }),
      deadLetters: new Gauge({
        name: "dms_actions_dead_letters",
        help: "Deliveries that gave up (the outbox's dead letters)",
        registers,
        async collect() {
          this.set(await store.countDead());
        },
      }),
    };
  }

  /** Writes the actions in one transaction; resolves once they are durable. Known keys are dropped. */
  async accept(actions: readonly TriggeredAction[]): Promise<void> {
    if (actions.length === 0) return;
    await this.store.accept(actions, this.timers.now());
    this.kick();
  }

  async start(): Promise<void> {
    // Nothing is in flight in an outbox that just started: what it held goes again, and so does what
    // outboxes that died held once their leases ended. Live outboxes' claims stay theirs.
    await this.store.releaseClaims(this.timers.now(), this.owner);
    await this.prune();
    this.pruneTimer = setInterval(
      () => void this.prune().catch((err: unknown) => this.logger.warn({ err }, "the outbox could not prune")),
      3600_000,
    );
    this.pruneTimer.unref();
    this.leaseTimer = setInterval(() => void this.keepLease(), this.leaseMs / 3);
    this.leaseTimer.unref();
    this.running = true;
    this.kick();
  }

  /** Renews this outbox's claims, then frees those of outboxes whose leases ended (they died) to deliver them. */
  private async keepLease(): Promise<void> {
    try {
      const now = this.timers.now();
      await this.store.renew(this.owner, now + this.leaseMs);
      if ((await this.store.releaseClaims(now)) > 0) this.kick();
    } catch (err) {
      this.logger.error({ err }, "the outbox could not renew its claims");
    }
  }

  async stop(): Promise<void> {
    this.running = false;
    clearInterval(this.pruneTimer);
    clearInterval(this.leaseTimer);
    this.timer?.cancel();
    this.timer = undefined;
    await Promise.allSettled([...this.inFlight]);
  }

  /** Forgets delivered rows past the retention; dead letters stay until retried. */
  prune(): Promise<number> {
    return this.store.pruneDelivered(this.timers.now() - DELIVERED_RETENTION_MS);
  }

  /** Deliveries not yet delivered nor dead, for tests and the benchmark. */
  pendingCount(): Promise<number> {
    return this.store.countWaiting();
  }

  async get(id: string): Promise<DeliveryRecord | undefined> {
    const delivery = await this.stored(id);
    return delivery && toRecord(delivery);
  }

  /** The domain of the rule that made a delivery, for access checks. */
  async domainOf(id: string): Promise<string | undefined> {
    return (await this.stored(id))?.ruleDomain;
  }

  /** Dead letters of rules in `domains`, newest first. */
  async deadLetters(
    domains: readonly string[],
    size: number,
    marker?: number,
  ): Promise<{ items: DeliveryRecord[]; nextMarker?: string }> {
    const rows = await this.store.deadLetters(domains, size + 1, marker);
    const items = rows.slice(0, size).map(toRecord);
    return rows.length > size ? { items, nextMarker: items[items.length - 1]!.id } : { items };
  }

  /** Sends a dead letter again with a fresh set of attempts; answers undefined when `id` is not dead. */
  async retryDeadLetter(id: string): Promise<DeliveryRecord | undefined> {
    const delivery = await this.stored(id);
    if (!delivery || delivery.status !== "dead") return undefined;
    const now = this.timers.now();
    await this.store.settle(
      delivery.id,
      { status: "pending", attempts: 0, nextAttemptAt: now, lastError: delivery.lastError },
      now,
    );
    this.kick();
    return this.get(id);
  }

  private stored(id: string): Promise<StoredDelivery | undefined> {
    return /^\d{1,15}$/.test(id) ? this.store.get(Number(id)) : Promise.resolve(undefined);
  }

  private kick(): void {
    if (!this.running || this.pumpQueued) return;
    this.pumpQueued = true;
    setImmediate(() => {
      this.pumpQueued = false;
      void this.pump();
    });
  }

  private async pump(): Promise<void> {
    if (!this.running) return;
    if (this.pumping) {
      this.pumpAgain = true;
      return;
    }
    this.pumping = true;
    try {
      do {
        this.pumpAgain = false;
        await this.claimAndDeliver();
      } while (this.pumpAgain && this.running);
      this.storeRetryMs = 0;
    } catch (err) {
      // The store cannot be read (the database is away): nothing was claimed, so the pump tries again later.
      this.storeRetryMs = Math.min(STORE_RETRY_MAX_MS, Math.max(STORE_RETRY_MS, this.storeRetryMs * 2));
      this.logger.warn({ err, retryInMs: this.storeRetryMs }, "the outbox could not claim deliveries");
      this.timer?.cancel();
      const at = this.timers.now() + this.storeRetryMs;
      const cancel = this.timers.setTimeout(() => {
        this.timer = undefined;
        this.kick();
      }, this.storeRetryMs);
      this.timer = { at, cancel };
    } finally {
      this.pumping = false;
    }
  }

  private async claimAndDeliver(): Promise<void> {
    const free = this.concurrency - this.inFlight.size;
    if (free > 0) {
      const now = this.timers.now();
      const claim = { owner: this.owner, now, limit: free, leaseUntil: now + this.leaseMs };
      for (const delivery of await this.store.claim(claim)) {
        const p = this.deliver(delivery).finally(() => {
          this.inFlight.delete(p);
          this.kick();
        });
        this.inFlight.add(p);
      }
    }
    await this.armTimer();
  }

  /** One timer for the earliest pending retry; deliveries that finish re-arm it. */
  private async armTimer(): Promise<void> {
    if (this.inFlight.size >= this.concurrency) return;
    const at = await this.store.nextDue();
    if (at === undefined || !this.running) return;
    if (this.timer && this.timer.at <= at) return;
    this.timer?.cancel();
    const cancel = this.timers.setTimeout(() => {
      this.timer = undefined;
      this.kick();
    }, at - this.timers.now());
    this.timer = { at, cancel };
  }

  private async deliver(row: StoredDelivery): Promise<void> {
    const definition = ACTION_DEFINITIONS[row.type] as (typeof ACTION_DEFINITIONS)[ActionType] | undefined;
    const settle = async (
      status: DeliveryStatus,
      attempts: number,
      nextAttemptAt: number,
      lastError: string | null,
    ) => {
      const outcome = { status, attempts, nextAttemptAt, lastError };
      if (!(await this.settleDurably(row.id, outcome))) {
        this.logger.warn(
          { delivery: row.id, status },
          "a delivery's claim had ended and been taken over; outcome not recorded",
        );
      }
    };
    if (!definition) {
      await settle("dead", row.attempts + 1, row.nextAttemptAt, `unknown action type ${row.type}`);
      return;
    }
    const raw = row.config;
    const payload = row.payload;
    const attempt = row.attempts + 1;
    try {
      const config = substitute(raw, payloadScope(payload), (v) => this.unknownVariable(row.ruleId, v));
      await this.deliverers[row.type]({
        id: row.id,
        idempotencyKey: row.idempotencyKey,
        ruleId: row.ruleId,
        thingName: row.thingName,
        attempt,
        config,
        payload,
      });
      const now = this.timers.now();
      await settle("delivered", attempt, row.nextAttemptAt, null);
      this.metrics?.delivered.inc({ type: row.type, result: "delivered" });
      this.metrics?.latency.observe({ type: row.type }, Math.max(0, now - payload.timestamp) / 1000);
    } catch (err) {
      if (err instanceof Deferred) {
        await settle("pending", row.attempts, err.until, row.lastError);
        this.metrics?.delivered.inc({ type: row.type, result: "deferred" });
        return;
      }
      const message = err instanceof Error ? err.message : String(err);
      const policy = definition.retry(raw);
      const permanent = err instanceof PermanentFailure || err instanceof TemplateError;
      if (permanent || attempt > policy.maxAttempts) {
        await settle("dead", attempt, row.nextAttemptAt, message);
        this.metrics?.delivered.inc({ type: row.type, result: "dead" });
        this.logger.warn({ delivery: row.id, rule: row.ruleId, type: row.type, attempt, err: message }, "dead letter");
        return;
      }
      const next = this.timers.now() + retryDelaySeconds(policy, attempt) * 1000;
      await settle("pending", attempt, next, message);
      this.metrics?.delivered.inc({ type: row.type, result: "retry" });
      this.logger.debug({ delivery: row.id, type: row.type, attempt, err: message }, "delivery failed, will retry");
    }
  }

  /**
   * Records a delivery's outcome, asking the store again until it answers: a claim whose outcome
   * was not recorded would stay this live outbox's, renewed and never delivered. Gives up only when
   * the outbox stops (the claim goes again at the next start, or to another outbox when its lease
   * ends); answers whether the claim was still this outbox's.
   */
  private async settleDurably(id: number, outcome: Parameters<OutboxStore["settle"]>[1]): Promise<boolean> {
    for (let waitMs = STORE_RETRY_MS; ; waitMs = Math.min(STORE_RETRY_MAX_MS, waitMs * 2)) {
      try {
        return await this.store.settle(id, outcome, this.timers.now(), this.owner);
      } catch (err) {
        if (!this.running) {
          this.logger.warn({ err, delivery: id }, "a delivery's outcome was not recorded; it goes again");
          return true;
        }
        if (waitMs === STORE_RETRY_MS)
          this.logger.warn({ err, delivery: id }, "a delivery's outcome could not be recorded yet; trying again");
        await new Promise<void>((resolve) => this.timers.setTimeout(resolve, waitMs));
      }
    }
  }

  private unknownVariable(ruleId: string, variable: string): void {
    const key = `${ruleId}\u0000${variable}`;
    if (this.unknownLogged.has(key)) return;
    this.unknownLogged.set(key, true);
    this.logger.warn({ rule: ruleId, variable }, "unknown ${} variable in an action config: substituted by ''");
  }
}

function toRecord(d: StoredDelivery): DeliveryRecord {
  const record: DeliveryRecord = {
    id: String(d.id),
    idempotencyKey: d.idempotencyKey,
    ruleId: d.ruleId,
    thingName: d.thingName,
    type: d.type,
    status: d.status,
    attempts: d.attempts,
    config: d.config,
    createdAt: new Date(d.createdAt).toISOString(),
    updatedAt: new Date(d.updatedAt).toISOString(),
  };
  if (d.lastError !== null) record.lastError = d.lastError;
  if (d.status === "pending") record.nextAttemptAt = new Date(d.nextAttemptAt).toISOString();
  return record;
}
