import { ApiError } from "../errors/index.js";
import { isoNow, type Db } from "../store/index.js";
import type { Rule } from "../rule-model/index.js";
import { generatedRuleId, ruleColumns, type RuleStore } from "./store.js";

/** Rules in the process's SQLite database (`rulesMigrations`). */
export class SqliteRuleStore implements RuleStore {
  constructor(
    private readonly db: Db,
    private readonly idPrefix: string,
  ) {}

  async get(id: string): Promise<Rule | undefined> {
    return this.getNow(id);
  }

  async all(): Promise<Rule[]> {
    return this.db
      .prepare<[], { doc: string }>("SELECT doc FROM rules ORDER BY id")
      .all()
      .map((r) => JSON.parse(r.doc) as Rule);
  }

  async nextId(): Promise<string> {
    return this.db.transaction(() => {
      for (;;) {
        const { value } = this.db
          .prepare<[], { value: number }>("UPDATE rule_id_sequence SET value = value + 1 RETURNING value")
          .get()!;
        const id = generatedRuleId(this.idPrefix, value);
        if (!this.getNow(id)) return id;
      }
    })();
  }

  async insert(rule: Rule): Promise<void> {
    const now = isoNow();
    const c = ruleColumns(rule);
    const { changes } = this.db
      .prepare(
        `INSERT OR IGNORE INTO rules (id, domain, thing_type, enabled, doc, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(rule.id, c.domain, c.thingType, c.enabled ? 1 : 0, c.doc, now, now);
    if (changes === 0) throw new ApiError("RULE_ID_EXISTS", `Rule ${rule.id} already exists`, "id");
  }

  async replace(rule: Rule): Promise<void> {
    const c = ruleColumns(rule);
    this.db
      .prepare("UPDATE rules SET domain = ?, thing_type = ?, enabled = ?, doc = ?, updated_at = ? WHERE id = ?")
      .run(c.domain, c.thingType, c.enabled ? 1 : 0, c.doc, isoNow(), rule.id);
  }

  async remove(id: string): Promise<void> {
    this.db.prepare("DELETE FROM rules WHERE id = ?").run(id);
  }

  private getNow(id: string): Rule | undefined {
    const row = this.db.prepare<[string], { doc: string }>("SELECT doc FROM rules WHERE id = ?").get(id);
    return row && (JSON.parse(row.doc) as Rule);
  }
}
