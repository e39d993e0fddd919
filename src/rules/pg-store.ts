import { ApiError } from "../errors/index.js";
import type { PgPool } from "../store/index.js";
import type { Rule } from "../rule-model/index.js";
import { generatedRuleId, ruleColumns, type RuleStore } from "./store.js";

/** Rules in PostgreSQL (`rulesPgMigrations`), for processes of a cluster sharing one database. */
export class PgRuleStore implements RuleStore {
  constructor(
    private readonly pool: PgPool,
    private readonly idPrefix: string,
  ) {}

  async get(id: string): Promise<Rule | undefined> {
    const { rows } = await this.pool.query<{ doc: Rule }>("SELECT doc FROM rules WHERE id = $1", [id]);
    return rows[0]?.doc;
  }

  async all(): Promise<Rule[]> {
    // COLLATE "C": ids in byte order, as SQLite sorts them, whatever the database's locale.
    const { rows } = await this.pool.query<{ doc: Rule }>('SELECT doc FROM rules ORDER BY id COLLATE "C"');
    return rows.map((r) => r.doc);
  }

  async nextId(): Promise<string> {
    // A sequence hands each number out once across every process; an explicit CREATE may have
    // taken the id, and its number is skipped. An insert racing for it meets RULE_ID_EXISTS.
    for (;;) {
      const { rows } = await this.pool.query<{ n: string }>("SELECT nextval('rule_id_sequence')::text AS n");
      const id = generatedRuleId(this.idPrefix, Number(rows[0]!.n));
      if (!(await this.get(id))) return id;
    }
  }

  async insert(rule: Rule): Promise<void> {
    const c = ruleColumns(rule);
    const { rowCount } = await this.pool.query(
      `INSERT INTO rules (id, domain, thing_type, enabled, doc) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (id) DO NOTHING`,
      [rule.id, c.domain, c.thingType, c.enabled, c.doc],
    );
    if (rowCount === 0) throw new ApiError("RULE_ID_EXISTS", `Rule ${rule.id} already exists`, "id");
  }

  async replace(rule: Rule): Promise<void> {
    const c = ruleColumns(rule);
    await this.pool.query(
      "UPDATE rules SET domain = $2, thing_type = $3, enabled = $4, doc = $5, updated_at = now() WHERE id = $1",
      [rule.id, c.domain, c.thingType, c.enabled, c.doc],
    );
  }

  async remove(id: string): Promise<void> {
    await this.pool.query("DELETE FROM rules WHERE id = $1", [id]);
  }
}
