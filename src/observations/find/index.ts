export { planFind, runFind, type FindPlan, type FindScope } from "./search.js";
export { createFindRunner, type FindRunner, type FindRunnerOptions } from "./runner.js";
export { FIND_LIMITS } from "./limits.js";
