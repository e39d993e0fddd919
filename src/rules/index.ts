export * from "../rule-model/index.js";
export type { RuleStore } from "./store.js";
export { SqliteRuleStore } from "./sqlite-store.js";
export { PgRuleStore } from "./pg-store.js";
export { RuleCache } from "./cache.js";
export { RulesService, type RuleView, type BulkResult, type RulesOptions } from "./service.js";
export {
  RuleBodySchema,
  CreateRuleBodySchema,
  BulkUpdateSchema,
  DryRunSchema,
  ExpressionItemSchema,
  ActionItemSchema,
  RULE_ID,
  CATEGORY,
  type RuleBody,
  type CreateRuleBody,
  type BulkUpdateBody,
  type DryRunBody,
} from "./schema.js";
export { findCycle, checkLoop, checkChaining, overlapWith, reads, writes, MIN_CHAINED_INTERVAL } from "./loop.js";
export { MAX_POLYGON_POINTS } from "./validate.js";
export { rulesMigrations, rulesPgMigrations } from "./migrations.js";
export {
  dryRun,
  MAX_DRY_RUN_OBSERVATIONS,
  type DryRunObservation,
  type DryRunItem,
  type DryRunReport,
} from "./dry-run.js";
export { createRules, type Rules, type RulesDeps } from "./create.js";
