import { workerData } from "node:worker_threads";
import Database from "better-sqlite3";
import { lowerThreadPriority } from "../store/index.js";
import { COLUMN_DAYS_PER_PASS, storeDayColumns } from "./partitions.js";

/**
 * The column cache builder beside the observation writer: its own connection to
 * the observation file, at a lower priority, so that taking a closed day apart
 * (about a second for 166,000 rows) runs beside the inserts instead of holding
 * them up (which stalled the Kafka source's batches and their latency). It reads
 * each day in a snapshot and writes the day's columns in a short transaction.
 */
export interface ColumnsThreadData {
  file: string;
  /** Nice steps below the process: the engine's and the writer's threads come first. */
  niceIncrement: number;
  /** How often it looks for closed days whose columns are missing or stale. */
  everyMs: number;
}

const { file, niceIncrement, everyMs } = workerData as ColumnsThreadData;
lowerThreadPriority(niceIncrement);
const db = new Database(file, { fileMustExist: true });
db.pragma("busy_timeout = 5000");
// Its reads would otherwise checkpoint the WAL now and then: the writer's connection and the checkpointer do that.
db.pragma("wal_autocheckpoint = 0");

setInterval(() => {
  try {
    storeDayColumns(db, COLUMN_DAYS_PER_PASS);
  } catch {
    // A busy file or a day dropped by retention meanwhile: the next pass tries again.
  }
}, everyMs);
