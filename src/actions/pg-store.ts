import type { TriggeredAction } from "../engine/index.js";
import { pgQuery, type PgPool } from "../store/index.js";
import { acceptedColumns, toDelivery, type DeliveryRow } from "./delivery-row.js";
import type { Claim, OutboxStore, Settlement, StoredDelivery } from "./store.js";

/**
 * The outbox in PostgreSQL (`actionsPgMigrations`), shared by every `actions` process of a
 * cluster: a claim locks the rows it takes `FOR UPDATE SKIP LOCKED`, so processes claiming at
 * once each get other deliveries and none waits on another.
 */
export class PgOutboxStore implements OutboxStore {
  constructor(private readonly pool: PgPool) {}

  private async rows(text: string, values: unknown[] = []): Promise<DeliveryRow[]> {
    return (await pgQuery<DeliveryRow>(this.pool, text, values)).rows;
  }

  private async changed(text: string, values: unknown[]): Promise<number> {
    return (await pgQuery(this.pool, text, values)).rowCount;
  }

  private async scalar(text: string): Promise<number | undefined> {
    const [row] = await pgQuery<{ v: number | null }>(this.pool, text).then((r) => r.rows);
    return row?.v ?? undefined;
  }

  async accept(actions: readonly TriggeredAction[], now: number): Promise<void> {
    if (actions.length === 0) return;
    // One statement over arrays, so the batch is one round trip and one transaction.
    const columns = actions.map(acceptedColumns);
    await pgQuery(
      this.pool,
      `INSERT INTO action_outbox (idempotency_key, rule_id, rule_domain, thing_name, type, config, payload,
         status, attempts, next_attempt_at, created_at, updated_at)
       SELECT k, r, d, t, ty, c, p, 'pending', 0, $8, $8, $8
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[])
           AS a(k, r, d, t, ty, c, p)
       ON CONFLICT (idempotency_key) DO NOTHING`,
      [...[0, 1, 2, 3, 4, 5, 6].map((i) => columns.map((c) => c[i])), now],
    );
  }

  async claim(c: Claim): Promise<StoredDelivery[]> {
    const rows = await this.rows(
      `UPDATE action_outbox o SET status = 'delivering', claimed_by = $1, lease_until = $2, updated_at = $3
         FROM (SELECT id FROM action_outbox WHERE status = 'pending' AND next_attempt_at <= $3
               ORDER BY next_attempt_at, id LIMIT $4 FOR UPDATE SKIP LOCKED) due
         WHERE o.id = due.id RETURNING o.*`,
      [c.owner, c.leaseUntil, c.now, c.limit],
    );
    return rows.map(toDelivery);
  }

  async renew(owner: string, leaseUntil: number): Promise<void> {
    await this.changed("UPDATE action_outbox SET lease_until = $1 WHERE claimed_by = $2 AND status = 'delivering'", [
      leaseUntil,
      owner,
    ]);
  }

  nextDue(): Promise<number | undefined> {
    return this.scalar("SELECT min(next_attempt_at) AS v FROM action_outbox WHERE status = 'pending'");
  }

  async settle(id: number, o: Settlement, now: number, owner?: string): Promise<boolean> {
    const n = await this.changed(
      `UPDATE action_outbox SET status = $1, attempts = $2, next_attempt_at = $3, last_error = $4, updated_at = $5,
         claimed_by = NULL, lease_until = NULL
       WHERE id = $6 AND ($7::text IS NULL OR (claimed_by = $7 AND status = 'delivering'))`,
      [o.status, o.attempts, o.nextAttemptAt, o.lastError, now, id, owner ?? null],
    );
    return n > 0;
  }

  releaseClaims(now: number, owner?: string): Promise<number> {
    return this.changed(
      `UPDATE action_outbox SET status = 'pending', claimed_by = NULL, lease_until = NULL
         WHERE status = 'delivering' AND (lease_until IS NULL OR lease_until <= $1 OR claimed_by = $2)`,
      [now, owner ?? null],
    );
  }

  pruneDelivered(before: number): Promise<number> {
    return this.changed("DELETE FROM action_outbox WHERE status = 'delivered' AND updated_at < $1", [before]);
  }

  async get(id: number): Promise<StoredDelivery | undefined> {
    const [row] = await this.rows("SELECT * FROM action_outbox WHERE id = $1", [id]);
    return row && toDelivery(row);
  }

  async deadLetters(domains: readonly string[], limit: number, before?: number): Promise<StoredDelivery[]> {
    if (domains.length === 0) return [];
    const rows = await this.rows(
      `SELECT * FROM action_outbox WHERE status = 'dead' AND rule_domain = ANY($1::text[])
         AND ($2::bigint IS NULL OR id < $2) ORDER BY id DESC LIMIT $3`,
      [domains, before ?? null, limit],
    );
    return rows.map(toDelivery);
  }

  async countWaiting(): Promise<number> {
    return (await this.scalar("SELECT count(*) AS v FROM action_outbox WHERE status IN ('pending', 'delivering')"))!;
  }

  async countDead(): Promise<number> {
    return (await this.scalar("SELECT count(*) AS v FROM action_outbox WHERE status = 'dead'"))!;
  }

  oldestWaiting(): Promise<number | undefined> {
    return this.scalar("SELECT min(created_at) AS v FROM action_outbox WHERE status IN ('pending', 'delivering')");
  }
}
