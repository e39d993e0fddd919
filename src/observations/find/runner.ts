import { fileURLToPath } from "node:url";
import { Piscina } from "piscina";
import { ApiError } from "../../errors/index.js";
import type { ObservationReader } from "../reader.js";
import type { ReaderSource } from "../source.js";
import { badQuery } from "./errors.js";
import { FIND_LIMITS, checkJsonDepth, timeBudgetExceeded } from "./limits.js";
import type { Doc } from "./fields.js";
import { findJson, type FieldTypes } from "./hits.js";
import { planFind, runFind, searchDocs } from "./search.js";
import { Turns } from "./turns.js";
import type { FindOutcome, FindRequestTask, FindTask, FindWorkerData } from "./worker.js";

/** What a FIND searches: the thing types, and the types their resources declare (declaredFieldTypes). */
export interface FindRunScope {
  thingTypes: readonly string[];
  fieldTypes: FieldTypes;
}

/** Runs FIND requests so that none can hold the event loop, each within a time budget. */
export interface FindRunner {
  /**
   * Plans and evaluates the request where it cannot hold the event loop: the
   * answer is JSON text, serialized where it was computed; a refusal rejects
   * with its ApiError. `caller` (the principal's home domain) decides whose turn it is
   * when requests wait for a thread (`Turns`).
   */
  find(request: unknown, now: number, scope: FindRunScope, caller: string): Promise<string>;
  /**
   * The same for documents held in memory (`/things/find` over the things a
   * caller may read): planned without the timestamp requirement, searched
   * where it cannot hold the event loop, within the same budget.
   */
  search(request: unknown, now: number, docs: readonly Doc[], shards: number, caller: string): Promise<string>;
  close(): Promise<void>;
}

export interface FindRunnerOptions {
  /** Where each thread opens its own reader; absent (a database in memory), requests are evaluated in-process. */
  source: ReaderSource | undefined;
  reader: ObservationReader;
  /** Worker threads; 0 evaluates in-process (tests of an in-memory database). */
  threads: number;
  /** Milliseconds a request may take from its arrival, waiting for a thread included. */
  budgetMs: number;
  /** Bytes of closed days' columns each FIND thread keeps (`SqliteObservationReader`); its default when absent. */
  columnCacheBytes?: number;
}

/** Past the budget, a thread stuck where it cannot check the clock (one long SQLite read, a sort) is ended. */
const HARD_STOP_GRACE_MS = 1000;
/** Requests waiting for a thread; each also leaves at its deadline, so this is a memory bound only. */
const MAX_QUEUE = 1000;
/** Requests of one caller waiting for a thread: a burst past it is refused, not queued ahead of others' turns. */
const MAX_QUEUE_PER_CALLER = 100;
/**
 * How long an idle FIND thread lives: its reader keeps the column cache of the
 * closed days it read (reader.ts), which a new thread takes apart again.
 */
const THREAD_IDLE_MS = 15 * 60_000;
/** Nice increment of FIND threads: the engine and the HTTP loop come first when the CPU is short. */
const NICE_INCREMENT = 10;
/**
 * Heap of one FIND thread: the matches of a query are held, up to MAX_MATCHES of
 * them, cut down to the fields the query reads. A query past it ends its thread, not the process.
 */
const THREAD_HEAP_MB = 3072;

export function createFindRunner(options: FindRunnerOptions): FindRunner {
  if (options.threads === 0 || options.source === undefined) return inProcess(options);
  return threaded(options, options.source);
}

/**
 * For an in-memory database: the same plan and budget, on this thread. The
 * budget still bounds each request, but it holds the loop while it runs.
 */
function inProcess({ reader, budgetMs }: FindRunnerOptions): FindRunner {
  const time = { budgetMs, remainingMs: budgetMs };
  return {
    find: async (request, now, { thingTypes, fieldTypes }) => {
      const plan = planFind(request, now, { fieldTypes });
      return findJson(await runFind(reader, plan, { thingTypes }, undefined, time));
    },
    search: async (request, now, docs, shards) => {
      const plan = planFind(request, now, { requireTimestamp: false });
      return findJson(searchDocs(plan, docs, shards, time));
    },
    close: async () => {},
  };
}

function threaded({ threads, budgetMs, columnCacheBytes }: FindRunnerOptions, source: ReaderSource): FindRunner {
  const workerData: FindWorkerData = { source, niceIncrement: NICE_INCREMENT, columnCacheBytes };
  const pool = new Piscina<FindTask, FindOutcome>({
    filename: fileURLToPath(new URL("./worker.mjs", import.meta.url)),
    minThreads: 0,
    maxThreads: threads,
    idleTimeout: THREAD_IDLE_MS,
    // Turns hands the pool no more requests than it has threads; this bounds the warm-up's only.
    maxQueue: MAX_QUEUE,
    workerData,
    resourceLimits: { maxOldGenerationSizeMb: THREAD_HEAP_MB },
  });
  // A thread's first start loads and compiles the FIND modules (a second or more on a busy machine):
  // requests wait for it before their clock starts, and the pool starts only when FIND is first used.
  let warm: Promise<unknown> | undefined;
  const warmUp = (): Promise<unknown> =>
    (warm ??= pool.run("warm-up").catch((err: unknown) => {
      warm = undefined;
      throw err;
    }));
  const turns = new Turns(threads, { waiting: MAX_QUEUE, waitingPerCaller: MAX_QUEUE_PER_CALLER });
  const refused = (why: "all" | "caller"): Error =>
    why === "all"
      ? badQuery(`${MAX_QUEUE} queries are waiting already; retry when they are answered`)
      : badQuery(`${MAX_QUEUE_PER_CALLER} of your domain's queries are waiting already; retry when they are answered`);
  /** Runs one request on a thread in the caller's turn: `task` is the request without its clock, which starts here. */
  const run = async (task: Omit<FindRequestTask, "deadline" | "budgetMs">, caller: string): Promise<string> => {
    // Planning is work too (compiling 1,000 patterns takes seconds): the thread does it. Here only
    // the nesting is checked, without recursion, so that no request can overflow the stack of
    // the structured clone that carries it to the thread.
    checkJsonDepth(task.request, FIND_LIMITS.jsonDepth);
    await warmUp();
    const deadline = Date.now() + budgetMs;
    // Waiting for its turn counts against the budget, as waiting for a thread always has.
    const release = await turns.take(caller, deadline, refused, () => timeBudgetExceeded(budgetMs));
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), budgetMs + HARD_STOP_GRACE_MS);
    try {
      const outcome = await pool.run({ ...task, deadline, budgetMs }, { signal: abort.signal });
      if ("error" in outcome) {
        const e = outcome.error;
        throw new ApiError(e.messageKey, e.message, e.property, outcome.status);
      }
      return outcome.json;
    } catch (err) {
      // An ended thread is replaced by a new one, whose start must not count against the next request.
      if (abort.signal.aborted) warm = undefined;
      throw asApiError(err, budgetMs);
    } finally {
      clearTimeout(timer);
      release();
    }
  };
  return {
    find: (request, now, { thingTypes, fieldTypes }, caller) =>
      run({ request, now, thingTypes: [...thingTypes], fieldTypes }, caller),
    search: (request, now, docs, shards, caller) =>
      run({ request, now, thingTypes: [], docs: [...docs], shards }, caller),
    close: () => pool.destroy(),
  };
}

function asApiError(err: unknown, budgetMs: number): unknown {
  if (err instanceof ApiError) return err;
  if (!(err instanceof Error)) return err;
  if (err.name === "AbortError") return timeBudgetExceeded(budgetMs);
  if (err.message === "Task queue is at limit")
    return badQuery(`${MAX_QUEUE} queries are waiting already; retry when they are answered`);
  if ((err as { code?: string }).code === "ERR_WORKER_OUT_OF_MEMORY")
    return badQuery(
      `it needed more than the ${THREAD_HEAP_MB} MB a query may use: narrow the timestamp range or the thing types`,
    );
  return err;
}
