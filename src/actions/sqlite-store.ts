import type { ActionType } from "../rule-model/index.js";
import type { RulePayload, TriggeredAction } from "../engine/index.js";
import type { Db } from "../store/index.js";
import type { DeliveryStatus, OutboxStore, Settlement, StoredDelivery } from "./store.js";

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

/** The outbox in the process's SQLite database (`actionsMigrations`). */
export class SqliteOutboxStore implements OutboxStore {
  private readonly stmt;

  constructor(private readonly db: Db) {
    const count = (where: string) =>
      db.prepare<[], { n: number }>(`SELECT count(*) AS n FROM action_outbox WHERE ${where}`);
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
      waiting: count("status IN ('pending', 'delivering')"),
      dead: count("status = 'dead'"),
      oldest: db.prepare<[], { at: number | null }>(
        "SELECT min(created_at) AS at FROM action_outbox WHERE status IN ('pending', 'delivering')",
      ),
    };
  }

  async accept(actions: readonly TriggeredAction[], now: number): Promise<void> {
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
  }

  async claim(now: number, limit: number): Promise<StoredDelivery[]> {
    return this.stmt.claim.all(now, now, limit).map(toDelivery);
  }

  async nextDue(): Promise<number | undefined> {
    return this.stmt.nextDue.get()?.at ?? undefined;
  }

  async settle(id: number, o: Settlement, now: number): Promise<void> {
    this.stmt.settle.run(o.status, o.attempts, o.nextAttemptAt, o.lastError, now, id);
  }

  async releaseClaims(): Promise<void> {
    this.db.prepare("UPDATE action_outbox SET status = 'pending' WHERE status = 'delivering'").run();
  }

  async pruneDelivered(before: number): Promise<number> {
    return this.db.prepare("DELETE FROM action_outbox WHERE status = 'delivered' AND updated_at < ?").run(before)
      .changes;
  }

  async get(id: number): Promise<StoredDelivery | undefined> {
    const row = this.stmt.byId.get(id);
    return row && toDelivery(row);
  }

  async deadLetters(domains: readonly string[], limit: number, before?: number): Promise<StoredDelivery[]> {
    if (domains.length === 0) return [];
    return this.db
      .prepare<(string | number)[], Row>(
        `SELECT * FROM action_outbox WHERE status = 'dead' AND rule_domain IN (${domains.map(() => "?").join(",")})
         ${before === undefined ? "" : "AND id < ?"} ORDER BY id DESC LIMIT ${limit}`,
      )
      .all(...domains, ...(before === undefined ? [] : [before]))
      .map(toDelivery);
  }

  async countWaiting(): Promise<number> {
    return this.stmt.waiting.get()!.n;
  }

  async countDead(): Promise<number> {
    return this.stmt.dead.get()!.n;
  }

  async oldestWaiting(): Promise<number | undefined> {
    return this.stmt.oldest.get()?.at ?? undefined;
  }
}

function toDelivery(r: Row): StoredDelivery {
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
  };
}
