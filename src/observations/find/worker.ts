import { workerData } from "node:worker_threads";
import { ApiError, type ErrorBody } from "../../errors/index.js";
import { lowerThreadPriority, unavailableError } from "../../store/index.js";
import { openObservationReader, type ReaderSource } from "../source.js";
import { timeBudgetExceeded } from "./limits.js";
import type { Doc } from "./fields.js";
import { findJson, type FieldTypes } from "./hits.js";
import { planFind, runFind, searchDocs } from "./search.js";

/** What the main thread sends: the request as received (not yet planned), and how long it may still run; or a warm-up. */
export type FindTask = FindRequestTask | "warm-up";

export interface FindRequestTask {
  request: unknown;
  now: number;
  thingTypes: string[];
  /** Declared types of the searched thing types' fields (declaredFieldTypes). */
  fieldTypes?: FieldTypes;
  /** Wall-clock (Date.now) time by which the answer is due: the budget counts the wait in the queue too. */
  deadline: number;
  budgetMs: number;
  /**
   * Documents held in memory (the things registry) to search instead of the
   * observations: planned without the timestamp requirement, as /things/find does.
   */
  docs?: Doc[];
  /** Shards the documents stand for (answered in `_shards`). */
  shards?: number;
}

/** The answer serialized here, off the main thread, or the error it is. */
export type FindOutcome = { json: string } | { error: ErrorBody; status: number };

export interface FindWorkerData {
  source: ReaderSource;
  /** Added to the thread's nice value, so that the engine's thread wins the CPU when both want it. */
  niceIncrement: number;
  /** Bytes of closed days' columns this thread's reader keeps (`DMS_FIND_COLUMN_CACHE_MB`). */
  columnCacheBytes: number | undefined;
}

const { source, niceIncrement, columnCacheBytes } = workerData as FindWorkerData;
lowerThreadPriority(niceIncrement);
const { reader } = openObservationReader(source, { columnCacheBytes });

export async function runFindTask(task: FindTask): Promise<FindOutcome> {
  if (task === "warm-up") return { json: "" };
  try {
    const remaining = task.deadline - Date.now();
    if (remaining <= 0) throw timeBudgetExceeded(task.budgetMs);
    const time = { budgetMs: task.budgetMs, remainingMs: remaining };
    if (task.docs) {
      const plan = planFind(task.request, task.now, { requireTimestamp: false });
      return { json: findJson(searchDocs(plan, task.docs, task.shards ?? 1, time)) };
    }
    const plan = planFind(task.request, task.now, { fieldTypes: task.fieldTypes });
    const answer = await runFind(reader, plan, { thingTypes: task.thingTypes }, undefined, time);
    return { json: findJson(answer) };
  } catch (err) {
    if (err instanceof ApiError) return { error: err.body(), status: err.status };
    // Answered here: what a thread throws reaches the caller without the code that names the fault.
    const unavailable = unavailableError(err);
    if (unavailable) return { error: unavailable.body(), status: unavailable.status };
    throw err;
  }
}
