export { planFind, runFind, searchDocs, type FindPlan, type FindScope } from "./search.js";
export type { Doc } from "./fields.js";
