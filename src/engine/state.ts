import type { NestedObservation } from "./types.js";

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
}

/** The threshold state of one (rule, thing) pair. */
export interface ThresholdState {
  /** Consecutive matching observations since the last reset. */
  count: number;
  /** Epoch milliseconds of the last time the actions ran, 0 if never. */
  lastFiredAt: number;
  /** The thing's `seq` at the last match: a match at `lastSeq + 1` is consecutive. */
  lastSeq?: number;
}

/**
 * Per-thing and per-(rule, thing) state of the engine. Implementations keep
 * it in memory for speed and persist it so that a restart neither forgets a
 * half-reached count nor fires an interval early. On scale-out the same seam
 * is restored from a compacted changelog topic.
 */
export interface StateStore {
  thing(thingName: string): ThingState | undefined;
  setThing(state: ThingState): void;
  threshold(ruleId: string, thingName: string): ThresholdState | undefined;
  setThreshold(ruleId: string, thingName: string, state: ThresholdState): void;
  /** Forgets every threshold of a removed or changed rule. */
  dropRule(ruleId: string): void;
  /** Makes every change so far durable. */
  flush(): Promise<void> | void;
}
