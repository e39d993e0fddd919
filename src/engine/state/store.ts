import type { NestedObservation } from "../types.js";

/** The last known state of one thing: for `thing.state.*` and enter/leave transitions. */
export interface ThingState {
  thingName: string;
  timestamp: number;
  state: Record<string, unknown>;
  /** Nested objects, one per (type, id), merged observation by observation. */
  nested?: NestedObservation[];
  /** How many observations of this thing were evaluated: a threshold counts consecutive matches by it. */
  seq?: number;
  /**
   * `<source>:<partition>` and offset of the last evaluated Kafka observation,
   * so a replay after a crash (state flushed, offset not yet committed) does not count twice.
   */
  lastSource?: string;
  lastOffset?: number;
  /**
   * The thresholds of this thing: live entries for rules that matched its previous
   * observation (a count that can go on) or fired within their interval, and inert
   * ones (`isLive` false) the engine reuses for the next rule that matches. Any other
   * (rule, thing) pair is at count 0 and never fired recently, so it needs no entry;
   * this keeps state small however many rules match now and then. Stores keep only
   * the live entries.
   */
  thresholds?: ThresholdState[];
}

/** The threshold state of one (rule, thing) pair. */
export interface ThresholdState {
  ruleId: string;
  /** Consecutive matching observations since the last reset. */
  count: number;
  /** Epoch milliseconds of the last time the actions ran, 0 if never. */
  lastFiredAt: number;
  /** The thing's `seq` at the last match: a match at `lastSeq + 1` is consecutive. */
  lastSeq?: number;
  /** The rule's conditions version (`CompiledRule.version`) this entry counts under. */
  version?: number;
}

/** Whether an entry holds anything: a count going on, or a firing whose interval may not have passed. */
export function isLive(e: ThresholdState): boolean {
  return e.count > 0 || e.lastFiredAt !== 0;
}

/**
 * Per-thing state of the engine, thresholds included (`ThingState.thresholds`),
 * so one thing is one record to keep and write. Implementations keep
 * it in memory for speed and persist it so that a restart neither forgets a
 * half-reached count nor fires an interval early. Across nodes, a partition's
 * new owner reads it from the PostgreSQL store (docs/engine.md, Engine state across nodes).
 */
export interface StateStore {
  thing(thingName: string): ThingState | undefined;
  /** A thing seen for the first time; the engine mutates the object in place from then on. */
  add(state: ThingState): void;
  /** Forgets every threshold of a removed or changed rule. */
  dropRule(ruleId: string): void;
  /**
   * Makes durable the states given (a checkpoint's slice: each once; the engine
   * tracks what changed, so its hot path touches no set of the store's) and
   * whatever `dropRule` changed. Takes the states as they
   * are during the call (the engine goes on changing the objects once it returns);
   * the promise resolves once they are durable, and may resolve after the engine
   * flushed later batches: flushes become durable in the order made.
   */
  flush(changed: readonly ThingState[]): Promise<void> | void;
  /**
   * Drops what is in memory and reads the durable state again: after a batch failed
   * between its evaluation and its flush, memory holds counts and positions the
   * durable state (and so a replay) does not. Reads what every flush made before it
   * wrote. Absent where memory is all there is.
   */
  reload?(): Promise<void> | void;
  /** Lets go of what the store holds open (a writer thread) once its flushes are durable. */
  close?(): Promise<void>;
}
