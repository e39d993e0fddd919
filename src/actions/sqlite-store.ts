import type { TriggeredAction } from "../engine/index.js";
import type { Db } from "../store/index.js";
import { acceptedColumns, toDelivery, type DeliveryRow } from "./delivery-row.js";
import type { Claim, DeliveryStatus, OutboxStore, Settlement, StoredDelivery } from "./store.js";

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
      claim: db.prepare<[string, number, number, number, number], DeliveryRow>(
        `UPDATE action_outbox SET status = 'delivering', claimed_by = ?, lease_until = ?, updated_at = ? WHERE id IN (
           SELECT id FROM action_outbox WHERE status = 'pending' AND next_attempt_at <= ?
           ORDER BY next_attempt_at, id LIMIT ?) RETURNING *`,
      ),
      renew: db.prepare<[number, string]>(
        "UPDATE action_outbox SET lease_until = ? WHERE claimed_by = ? AND status = 'delivering'",
      ),
      nextDue: db.prepare<[], { at: number | null }>(
        "SELECT min(next_attempt_at) AS at FROM action_outbox WHERE status = 'pending'",
      ),
      settle: db.prepare<[DeliveryStatus, number, number, string | null, number, number]>(
        `UPDATE action_outbox SET status = ?, attempts = ?, next_attempt_at = ?, last_error = ?, updated_at = ?,
           claimed_by = NULL, lease_until = NULL WHERE id = ?`,
      ),
      settleClaimed: db.prepare<[DeliveryStatus, number, number, string | null, number, number, string]>(
        `UPDATE action_outbox SET status = ?, attempts = ?, next_attempt_at = ?, last_error = ?, updated_at = ?,
           claimed_by = NULL, lease_until = NULL WHERE id = ? AND claimed_by = ? AND status = 'delivering'`,
      ),
      release: db.prepare<[number, string | null]>(
        `UPDATE action_outbox SET status = 'pending', claimed_by = NULL, lease_until = NULL
           WHERE status = 'delivering' AND (lease_until IS NULL OR lease_until <= ? OR claimed_by = ?)`,
      ),
      prune: db.prepare<[number]>("DELETE FROM action_outbox WHERE status = 'delivered' AND updated_at < ?"),
      byId: db.prepare<[number], DeliveryRow>("SELECT * FROM action_outbox WHERE id = ?"),
      waiting: count("status IN ('pending', 'delivering')"),
      dead: count("status = 'dead'"),
      oldest: db.prepare<[], { at: number | null }>(
        "SELECT min(created_at) AS at FROM action_outbox WHERE status IN ('pending', 'delivering')",
      ),
    };
  }

  async accept(actions: readonly TriggeredAction[], now: number): Promise<void> {
    this.db.transaction(() => {
      for (const a of actions) this.stmt.insert.run(...acceptedColumns(a), now, now, now);
    })();
  }

  async claim(c: Claim): Promise<StoredDelivery[]> {
    return this.stmt.claim.all(c.owner, c.leaseUntil, c.now, c.now, c.limit).map(toDelivery);
  }

  async renew(owner: string, leaseUntil: number): Promise<void> {
    this.stmt.renew.run(leaseUntil, owner);
  }

  async nextDue(): Promise<number | undefined> {
    return this.stmt.nextDue.get()?.at ?? undefined;
  }

  async settle(id: number, o: Settlement, now: number, owner?: string): Promise<boolean> {
    const values = [o.status, o.attempts, o.nextAttemptAt, o.lastError, now, id] as const;
    const result =
      owner === undefined ? this.stmt.settle.run(...values) : this.stmt.settleClaimed.run(...values, owner);
    return result.changes > 0;
  }

  async releaseClaims(now: number, owner?: string): Promise<number> {
    return this.stmt.release.run(now, owner ?? null).changes;
  }

  async pruneDelivered(before: number): Promise<number> {
    return this.stmt.prune.run(before).changes;
  }

  async get(id: number): Promise<StoredDelivery | undefined> {
    const row = this.stmt.byId.get(id);
    return row && toDelivery(row);
  }

  async deadLetters(domains: readonly string[], limit: number, before?: number): Promise<StoredDelivery[]> {
    if (domains.length === 0) return [];
    return this.db
      .prepare<(string | number)[], DeliveryRow>(
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
