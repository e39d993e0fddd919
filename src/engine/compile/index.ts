export {
  compileRule,
  compileExpression,
  conditionsOf,
  type CompiledRule,
  type CompileOptions,
  type Test,
} from "./rule.js";
export { RuleSet } from "./ruleset.js";
export { EvalContext, UNTYPED, splitResource } from "./context.js";
export { RuleCompileError } from "./errors.js";
export { readGeoPoint, type LonLat } from "./geo.js";
export {
  compileScopeExpression,
  readPath,
  generatedCacheSize,
  GENERATED_CACHE_MAX,
  GENERATED_CACHE_MAX_BYTES,
  generatedCodeBytes,
  EXPRESSION_MAX_LENGTH,
  EXPRESSION_MAX_NODES,
  type ExpressionMode,
  type ScopeExpression,
} from "./expression.js";
