import { workerData } from "node:worker_threads";
import Database from "better-sqlite3";
import { ApiError, type ErrorBody } from "../../errors/index.js";
import { lowerThreadPriority } from "../../store/index.js";
import { SqliteObservationReader } from "../reader.js";
import { timeBudgetExceeded } from "./limits.js";
import type { Doc } from "./fields.js";
import { planFind, runFind, searchDocs } from "./search.js";

/** What the main thread sends: the request as received (not yet planned), and how long it may still run; or a warm-up. */
export type FindTask = FindRequestTask | "warm-up";

export interface FindRequestTask {
  request: unknown;
  now: number;
  thingTypes: string[];
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
  file: string;
  /** Added to the thread's nice value, so that the engine's thread wins the CPU when both want it. */
  niceIncrement: number;
  /** Bytes of closed days' columns this thread's reader keeps (`DMS_FIND_COLUMN_CACHE_MB`). */
  columnCacheBytes: number | undefined;
}

const { file, niceIncrement, columnCacheBytes } = workerData as FindWorkerData;
lowerThreadPriority(niceIncrement);
// Its own connection, read-only: the database is in WAL mode, so reads here never block the writer.
const db = new Database(file, { readonly: true, fileMustExist: true });
db.pragma("busy_timeout = 5000");
const reader = new SqliteObservationReader(db, { columnCacheBytes });

export function runFindTask(task: FindTask): FindOutcome {
  if (task === "warm-up") return { json: "" };
  try {
    const remaining = task.deadline - Date.now();
    if (remaining <= 0) throw timeBudgetExceeded(task.budgetMs);
    const time = { budgetMs: task.budgetMs, remainingMs: remaining };
    if (task.docs) {
      const plan = planFind(task.request, task.now, { requireTimestamp: false });
      return { json: JSON.stringify(searchDocs(plan, task.docs, task.shards ?? 1, time)) };
    }
    const plan = planFind(task.request, task.now);
    const answer = runFind(reader, plan, { thingTypes: task.thingTypes }, undefined, time);
    return { json: JSON.stringify(answer) };
  } catch (err) {
    if (err instanceof ApiError) return { error: err.body(), status: err.status };
    throw err;
  }
}
