export { planFind, runFind, searchDocs, type FindPlan, type FindScope } from "./search.js";
export type { Doc } from "./fields.js";
export { createFindRunner, type FindRunner, type FindRunnerOptions } from "./runner.js";
export { FIND_LIMITS } from "./limits.js";
