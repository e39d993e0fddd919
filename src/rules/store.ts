import type { EventBus } from "../bus/index.js";
import { ApiError } from "../errors/index.js";
import { isoNow, type Db } from "../store/index.js";
import type { Rule } from "../rule-model/index.js";

/** Generated ids: `<prefix><n>` with n left-padded to 8 digits. */
const PAD = 8;

/**
 * Rules in SQLite, one JSON document per rule with the columns the access
 * checks filter on. Every change is announced on the bus as `rule.changed`
 * so running engines recompile.
 */
export class RuleStore {
  constructor(
    private readonly db: Db,
    private readonly bus: EventBus,
    private readonly idPrefix: string,
  ) {}

  get(id: string): Rule | undefined {
    const row = this.db.prepare<[string], { doc: string }>("SELECT doc FROM rules WHERE id = ?").get(id);
    return row && (JSON.parse(row.doc) as Rule);
  }

  all(): Rule[] {
    return this.db
      .prepare<[], { doc: string }>("SELECT doc FROM rules ORDER BY id")
      .all()
      .map((r) => JSON.parse(r.doc) as Rule);
  }

  /** The next free generated id; ids taken by explicit CREATEs are skipped. */
  nextId(): string {
    return this.db.transaction(() => {
      for (;;) {
        const { value } = this.db
          .prepare<[], { value: number }>("UPDATE rule_id_sequence SET value = value + 1 RETURNING value")
          .get()!;
        const id = `${this.idPrefix}${String(value).padStart(PAD, "0")}`;
        if (!this.get(id)) return id;
      }
    })();
  }

  insert(rule: Rule): void {
    const now = isoNow();
    const { changes } = this.db
      .prepare(
        `INSERT OR IGNORE INTO rules (id, domain, thing_type, enabled, doc, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(rule.id, rule.filter.domain, rule.filter.thingType, rule.enabled ? 1 : 0, JSON.stringify(rule), now, now);
    if (changes === 0) throw new ApiError("RULE_ID_EXISTS", `Rule ${rule.id} already exists`, "id");
    this.bus.emit("rule.changed", { id: rule.id, rule });
  }

  replace(rule: Rule): void {
    this.db
      .prepare("UPDATE rules SET domain = ?, thing_type = ?, enabled = ?, doc = ?, updated_at = ? WHERE id = ?")
      .run(rule.filter.domain, rule.filter.thingType, rule.enabled ? 1 : 0, JSON.stringify(rule), isoNow(), rule.id);
    this.bus.emit("rule.changed", { id: rule.id, rule });
  }

  remove(id: string): void {
    this.db.prepare("DELETE FROM rules WHERE id = ?").run(id);
    this.bus.emit("rule.changed", { id, rule: null });
  }
}
