export { planFind, runFind, type FindPlan, type FindScope } from "./search.js";
