import { ApiError, type ErrorBody } from "../errors/index.js";
import { planFind, type FieldTypes } from "../observations/index.js";

/** A FIND request to plan (and so to check) before it goes to OpenSearch. */
export interface PlanTask {
  request: unknown;
  now: number;
  fieldTypes: FieldTypes;
}

/** What the plan says that the answer needs, or the request's refusal. */
export type PlanOutcome = { size: number } | { error: ErrorBody; status: number };

export function planTask(task: PlanTask): PlanOutcome {
  try {
    return { size: planFind(task.request, task.now, { fieldTypes: task.fieldTypes }).size };
  } catch (err) {
    if (err instanceof ApiError) return { error: err.body(), status: err.status };
    throw err;
  }
}
