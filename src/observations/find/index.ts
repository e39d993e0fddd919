export { planFind, runFind, searchDocs, type FindPlan, type FindScope } from "./search.js";
export type { Doc } from "./fields.js";
export { createFindRunner, type FindRunner, type FindRunnerOptions, type FindRunScope } from "./runner.js";
export { declaredFieldTypes, findJson, type FieldTypes } from "./hits.js";
export { FIND_LIMITS } from "./limits.js";
export { dateRangeBounds } from "./query.js";
export { badQuery } from "./errors.js";
export { checkJsonDepth, timeBudgetExceeded } from "./limits.js";
