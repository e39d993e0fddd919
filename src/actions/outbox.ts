import { LRUCache } from "lru-cache";
import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import type { Logger } from "../observability/index.js";
import type { ActionType } from "../rule-model/index.js";
import type { Db } from "../store/index.js";
import { Deferred, PermanentFailure, retryDelaySeconds, type ActionDeps, type Delivery } from "./action.js";
import { ACTION_DEFINITIONS } from "./definitions.js";
import type { ActionSink, RulePayload, TriggeredAction } from "../engine/index.js";
import { payloadScope } from "./scope.js";
import { TemplateError, substitute } from "./template.js";
import type { Timers } from "./timers.js";

export type DeliveryStatus = "pending" | "delivering" | "delivered" | "dead";

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

interface Row {
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
}

export interface OutboxOptions {
  db: Db;
  deps: ActionDeps;
  logger: Logger;
  timers: Timers;
  /** Deliveries in flight at once. */
  concurrency?: number;
  registry?: Registry;
}

export const DEFAULT_CONCURRENCY = 64;
/**
 * Delivered rows are kept this long so that a replay of the same
 * observations (a Kafka rebalance, a restart before the offset commit)
 * finds their keys and sends nothing twice; then they are pruned.
 */
export const DELIVERED_RETENTION_MS = 7 * 24 * 3600_000;
/** Rule and variable pairs already logged as unknown; one evicted is logged once more. */
const UNKNOWN_LOG_LIMIT = 10_000;

/**
 * The durable outbox: triggered actions are written in one transaction and
 * deduplicated by idempotency key; a bounded pool of workers delivers the due
 * ones, retries failures on the action's schedule and keeps those that run
 * out of attempts as dead letters. State lives in SQLite, so a restart picks
 * up whatever was not delivered.
 */
export class Outbox implements ActionSink {
  private readonly db: Db;
  private readonly timers: Timers;
  private readonly logger: Logger;
  private readonly concurrency: number;
  private readonly deliverers: Record<ActionType, (d: Delivery<Record<string, unknown>>) => Promise<void>>;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly unknownLogged = new LRUCache<string, true>({ max: UNKNOWN_LOG_LIMIT });
  private readonly stmt;
  private readonly metrics;
  private running = false;
  private pumpQueued = false;
  private timer: { at: number; cancel: () => void } | undefined;
  private pruneTimer: NodeJS.Timeout | undefined;

  constructor(options: OutboxOptions) {
    this.db = options.db;
    this.timers = options.timers;
    this.logger = options.logger;
    this.concurrency = options.concurrency ?? DEFAULT_CONCURRENCY;
    const deps = options.deps;
    this.deliverers = {
      WEBHOOK: ACTION_DEFINITIONS.WEBHOOK.create(deps),
      EMAIL: ACTION_DEFINITIONS.EMAIL.create(deps),
      SET_RESOURCE: ACTION_DEFINITIONS.SET_RESOURCE.create(deps),
      SMS: ACTION_DEFINITIONS.SMS.create(deps),
      EVENT: ACTION_DEFINITIONS.EVENT.create(deps),
    };
    const db = this.db;
    this.stmt = {
      insert: db.prepare(
        `INSERT OR IGNORE INTO action_outbox (idempotency_key, rule_id, rule_domain, thing_name, type, config, payload,
           status, attempts, next_attempt_at, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?)`,
      ),
      claim: db.prepare<[number, number, number], Row>(
        `UPDATE action_outbox SET status = 'delivering', updated_at = ? WHERE id IN (
           SELECT id FROM action_outbox WHERE status = 'pending' AND next_attempt_at <= ?
           ORDER BY next_attempt_at, id LIMIT ?) RETURNING *`,
      ),
      nextDue: db.prepare<[], { at: number | null }>(
        "SELECT min(next_attempt_at) AS at FROM action_outbox WHERE status = 'pending'",
      ),
      settle: db.prepare<[DeliveryStatus, number, number, string | null, number, number]>(
        "UPDATE action_outbox SET status = ?, attempts = ?, next_attempt_at = ?, last_error = ?, updated_at = ? WHERE id = ?",
      ),
      byId: db.prepare<[number], Row>("SELECT * FROM action_outbox WHERE id = ?"),
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
    const count = (where: string) => {
      const stmt = this.db.prepare<[], { n: number }>(`SELECT count(*) AS n FROM action_outbox WHERE ${where}`);
      return () => stmt.get()!.n;
    };
    const waiting = count("status IN ('pending', 'delivering')");
    const dead = count("status = 'dead'");
    const oldest = this.db.prepare<[], { at: number | null }>(
      "SELECT min(created_at) AS at FROM action_outbox WHERE status IN ('pending', 'delivering')",
    );
    const timers = this.timers;
    const registers = [registry];
    return {
      depth: new Gauge({
        name: "dms_actions_outbox_depth",
        help: "Deliveries pending or under way in the outbox",
        registers,
        collect() {
          this.set(waiting());
        },
      }),
      oldest: new Gauge({
        name: "dms_actions_outbox_oldest_pending_seconds",
        help: "How long the oldest pending delivery has waited since its rule triggered (0: none)",
        registers,
        collect() {
          const at = oldest.get()!.at;
          this.set(at === null ? 0 : Math.max(0, (timers.now() - at) / 1000));
        },
      }),
      deadLetters: new Gauge({
        name: "dms_actions_dead_letters",
        help: "Deliveries that gave up (the outbox's dead letters)",
        registers,
        collect() {
          this.set(dead());
        },
      }),
    };
  }

  /** Writes the actions in one transaction; resolves once they are durable. Known keys are dropped. */
  async accept(actions: readonly TriggeredAction[]): Promise<void> {
    if (actions.length === 0) return;
    const now = this.timers.now();
    this.db.transaction(() => {
      for (const a of actions) {
        this.stmt.insert.run(
          a.idempotencyKey,
          a.ruleId,
          a.payload.rule.domain,
          a.thingName,
          a.type,
          JSON.stringify(a.config),
          JSON.stringify(a.payload),
          now,
          now,
          now,
        );
      }
    })();
    this.kick();
  }

  async start(): Promise<void> {
    // Nothing is in flight in a process that just started: what was, goes again.
    this.db.prepare("UPDATE action_outbox SET status = 'pending' WHERE status = 'delivering'").run();
    this.prune();
    this.pruneTimer = setInterval(() => this.prune(), 3600_000);
    this.pruneTimer.unref();
    this.running = true;
    this.kick();
  }

  async stop(): Promise<void> {
    this.running = false;
    clearInterval(this.pruneTimer);
    this.timer?.cancel();
    this.timer = undefined;
    await Promise.allSettled([...this.inFlight]);
  }

  /** Forgets delivered rows past the retention; dead letters stay until retried. */
  prune(): number {
    return this.db
      .prepare("DELETE FROM action_outbox WHERE status = 'delivered' AND updated_at < ?")
      .run(this.timers.now() - DELIVERED_RETENTION_MS).changes;
  }

  /** Deliveries not yet delivered nor dead, for tests and the benchmark. */
  pendingCount(): number {
    return this.db
      .prepare<[], { n: number }>("SELECT count(*) AS n FROM action_outbox WHERE status IN ('pending', 'delivering')")
      .get()!.n;
  }

  get(id: string): DeliveryRecord | undefined {
    const row = /^\d{1,15}$/.test(id) ? this.stmt.byId.get(Number(id)) : undefined;
    return row && toRecord(row);
  }

  /** The domain of the rule that made a delivery, for access checks. */
  domainOf(id: string): string | undefined {
    const row = /^\d{1,15}$/.test(id) ? this.stmt.byId.get(Number(id)) : undefined;
    return row?.rule_domain;
  }

  /** Dead letters of rules in `domains`, newest first. */
  deadLetters(
    domains: readonly string[],
    size: number,
    marker?: number,
  ): { items: DeliveryRecord[]; nextMarker?: string } {
    if (domains.length === 0) return { items: [] };
    const rows = this.db
      .prepare<(string | number)[], Row>(
        `SELECT * FROM action_outbox WHERE status = 'dead' AND rule_domain IN (${domains.map(() => "?").join(",")})
         ${marker === undefined ? "" : "AND id < ?"} ORDER BY id DESC LIMIT ${size + 1}`,
      )
      .all(...domains, ...(marker === undefined ? [] : [marker]));
    const items = rows.slice(0, size).map(toRecord);
    return rows.length > size ? { items, nextMarker: items[items.length - 1]!.id } : { items };
  }

  /** Sends a dead letter again with a fresh set of attempts; answers undefined when `id` is not dead. */
  retryDeadLetter(id: string): DeliveryRecord | undefined {
    const row = this.get(id);
    if (!row || row.status !== "dead") return undefined;
    const now = this.timers.now();
    this.stmt.settle.run("pending", 0, now, row.lastError ?? null, now, Number(id));
    this.kick();
    return this.get(id);
  }

  private kick(): void {
    if (!this.running || this.pumpQueued) return;
    this.pumpQueued = true;
    setImmediate(() => {
      this.pumpQueued = false;
      this.pump();
    });
  }

  private pump(): void {
    if (!this.running) return;
    const free = this.concurrency - this.inFlight.size;
    if (free > 0) {
      const now = this.timers.now();
      for (const row of this.stmt.claim.all(now, now, free)) {
        const p = this.deliver(row).finally(() => {
          this.inFlight.delete(p);
          this.kick();
        });
        this.inFlight.add(p);
      }
    }
    this.armTimer();
  }

  /** One timer for the earliest pending retry; deliveries that finish re-arm it. */
  private armTimer(): void {
    if (this.inFlight.size >= this.concurrency) return;
    const at = this.stmt.nextDue.get()?.at;
    if (at === null || at === undefined) return;
    if (this.timer && this.timer.at <= at) return;
    this.timer?.cancel();
    const cancel = this.timers.setTimeout(() => {
      this.timer = undefined;
      this.kick();
    }, at - this.timers.now());
    this.timer = { at, cancel };
  }

  private async deliver(row: Row): Promise<void> {
    const definition = ACTION_DEFINITIONS[row.type] as (typeof ACTION_DEFINITIONS)[ActionType] | undefined;
    if (!definition) {
      this.stmt.settle.run(
        "dead",
        row.attempts + 1,
        row.next_attempt_at,
        `unknown action type ${row.type}`,
        this.timers.now(),
        row.id,
      );
      return;
    }
    const raw = JSON.parse(row.config) as Record<string, unknown>;
    const payload = JSON.parse(row.payload) as RulePayload;
    const attempt = row.attempts + 1;
    try {
      const config = substitute(raw, payloadScope(payload), (v) => this.unknownVariable(row.rule_id, v));
      await this.deliverers[row.type]({
        id: row.id,
        idempotencyKey: row.idempotency_key,
        ruleId: row.rule_id,
        thingName: row.thing_name,
        attempt,
        config,
        payload,
      });
      const now = this.timers.now();
      this.stmt.settle.run("delivered", attempt, row.next_attempt_at, null, now, row.id);
      this.metrics?.delivered.inc({ type: row.type, result: "delivered" });
      this.metrics?.latency.observe({ type: row.type }, Math.max(0, now - payload.timestamp) / 1000);
    } catch (err) {
      const now = this.timers.now();
      if (err instanceof Deferred) {
        this.stmt.settle.run("pending", row.attempts, err.until, row.last_error, now, row.id);
        this.metrics?.delivered.inc({ type: row.type, result: "deferred" });
        return;
      }
      const message = err instanceof Error ? err.message : String(err);
      const policy = definition.retry(raw);
      const permanent = err instanceof PermanentFailure || err instanceof TemplateError;
      if (permanent || attempt > policy.maxAttempts) {
        this.stmt.settle.run("dead", attempt, row.next_attempt_at, message, now, row.id);
        this.metrics?.delivered.inc({ type: row.type, result: "dead" });
        this.logger.warn({ delivery: row.id, rule: row.rule_id, type: row.type, attempt, err: message }, "dead letter");
        return;
      }
      const next = now + retryDelaySeconds(policy, attempt) * 1000;
      this.stmt.settle.run("pending", attempt, next, message, now, row.id);
      this.metrics?.delivered.inc({ type: row.type, result: "retry" });
      this.logger.debug({ delivery: row.id, type: row.type, attempt, err: message }, "delivery failed, will retry");
    }
  }

  private unknownVariable(ruleId: string, variable: string): void {
    const key = `${ruleId}\u0000${variable}`;
    if (this.unknownLogged.has(key)) return;
    this.unknownLogged.set(key, true);
    this.logger.warn({ rule: ruleId, variable }, "unknown ${} variable in an action config: substituted by ''");
  }
}

function toRecord(r: Row): DeliveryRecord {
  const record: DeliveryRecord = {
    id: String(r.id),
    idempotencyKey: r.idempotency_key,
    ruleId: r.rule_id,
    thingName: r.thing_name,
    type: r.type,
    status: r.status,
    attempts: r.attempts,
    config: JSON.parse(r.config) as Record<string, unknown>,
    createdAt: new Date(r.created_at).toISOString(),
    updatedAt: new Date(r.updated_at).toISOString(),
  };
  if (r.last_error !== null) record.lastError = r.last_error;
  if (r.status === "pending") record.nextAttemptAt = new Date(r.next_attempt_at).toISOString();
  return record;
}
