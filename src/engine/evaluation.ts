import { performance } from "node:perf_hooks";
import { ObservationColumnsBuilder } from "../observations/index.js";
import { EvalContext, readGeoPoint } from "./compile/index.js";
import { deadLetter, observationId, storeObservation, wrongType } from "./checks.js";
import type { Checkpoints } from "./checkpoints.js";
import type { DeadLetter, DeadLetterReason } from "./dead-letters/index.js";
import type { Ingested, Refusal } from "./decode.js";
import type { PartitionPositions } from "./positions.js";
import { turn } from "./queue.js";
import type { RuleIndex, TypeRules } from "./rule-index.js";
import { mergeNested, type Runtime, type Runtimes } from "./runtimes.js";
import type { RulePayload, TriggeredAction } from "./sink.js";
import type { Thresholds } from "./thresholds.js";
import type { NestedObservation, SourcePosition } from "./types.js";

/** Observations evaluated between two looks at the clock in `evaluate`. */
const SLICE = 250;
/** The longest `evaluate` holds the event loop before it lets timers and I/O run (give or take a slice). */
const SLICE_MS = 5;

export interface Rejected {
  /** Position of the item in the batch. */
  index: number;
  reason: DeadLetterReason;
  message: string;
}

export interface BatchResult {
  accepted: number;
  rejected: Rejected[];
  triggered: number;
  /** Rule matches counted toward thresholds (all expressions true), for the benchmark. */
  matched: number;
}

/** The in-memory side of one batch, before anything is written or handed over. */
export interface BatchWork extends BatchResult {
  actions: TriggeredAction[];
  /** The rows of the accepted observations, in batch order, built as they are accepted. */
  stored: ObservationColumnsBuilder;
  deadLetters: DeadLetter[];
}

/** An observation that passed the checks, between `checkObservation` and `advance`. */
interface Pending {
  position: SourcePosition;
  rt: Runtime;
  thingName: string;
  timestamp: number;
  os: Record<string, unknown>;
  nested: NestedObservation[] | undefined;
  hasCur: boolean;
  lon: number;
  lat: number;
  /** Already evaluated before a crash: stored again (idempotently), not counted. */
  replay: boolean;
  /** Made once, on first need: the stored row and the actions must carry the same id. */
  id: string | undefined;
  actions: TriggeredAction[] | undefined;
  /** The state's JSON text in the input, as the decode found it (`Ingested.stateBytes`): the stored row's. */
  stateBytes: Buffer | undefined;
  stateStart: number;
  stateEnd: number;
}

function newPending(position: SourcePosition, rt: Runtime): Pending {
  return {
    position,
    rt,
    thingName: "",
    timestamp: 0,
    os: {},
    nested: undefined,
    hasCur: false,
    lon: 0,
    lat: 0,
    replay: false,
    id: undefined,
    actions: undefined,
    stateBytes: undefined,
    stateStart: -1,
    stateEnd: -1,
  };
}

/**
 * A thing type's pending records in a slice: the first `size` of `pending`. The list keeps its
 * room from slice to slice (`length = 0` would give its backing store up, to be grown again by
 * every slice); records past `size` are the engine's own, left from an earlier slice.
 */
interface TypeGroup {
  pending: Pending[];
  size: number;
}

function pendingId(p: Pending): string {
  return (p.id ??= observationId(p.position));
}

/**
 * Evaluation of a decoded batch in memory: each observation checked against its thing (a dead
 * letter, a replay, or a pending record), then evaluated against the rules indexed for its thing's
 * type, its thresholds counted and its state merged; the batch's rows and triggered actions in
 * batch order. Writes nothing: the engine hands the result to the sink and the stores.
 */
export class BatchEvaluator {
  private readonly ctx = new EvalContext();
  /** Reused records of the current batch's accepted observations, in batch order. */
  private readonly pending: Pending[] = [];
  /** The current batch's pending records by thing type, reused. */
  private readonly groups = new Map<string, TypeGroup>();
  /** The clock when the current batch began: one time for all of it (intervals, dead letters). */
  private batchNow = 0;

  constructor(
    private readonly rules: RuleIndex,
    private readonly things: Runtimes,
    private readonly thresholds: Thresholds,
    private readonly positions: PartitionPositions,
    private readonly checkpoints: Checkpoints,
    private readonly clock: () => number,
    /** Whether a store takes the batch's rows: without one, no room is made for them. */
    private readonly storesRows: boolean,
  ) {}

  /**
   * The synchronous heart: check, evaluate, count and merge state for a whole
   * decoded batch (refusals become dead letters in place). Writes nothing.
   */
  process(batch: readonly Ingested[]): BatchWork {
    const work = this.begin(batch.length);
    this.slice(batch, 0, batch.length, work);
    return this.finish(work);
  }

  /**
   * As `process`, in slices with a turn of the event loop between them whenever a slice
   * took the loop for `SLICE_MS`: a source hands over thousands of observations at once,
   * and evaluated in one synchronous task they would hold every timer, socket and HTTP
   * request (/healthz) for the whole batch. One batch still: the same `now`, one list of
   * changed states, stored rows and actions in batch order, and nothing written until the
   * caller has the whole of it; batches still run one after the other (`handle`).
   */
  async evaluate(batch: readonly Ingested[]): Promise<BatchWork> {
    const work = this.begin(batch.length);
    let since = performance.now();
    for (let start = 0; start < batch.length; start += SLICE) {
      const end = Math.min(batch.length, start + SLICE);
      this.slice(batch, start, end, work);
      if (end < batch.length && performance.now() - since >= SLICE_MS) {
        await turn();
        since = performance.now();
      }
    }
    return this.finish(work);
  }

  /** A batch's work, empty, with room for the rows of `size` observations: `slice` fills it. */
  private begin(size: number): BatchWork {
    this.batchNow = this.clock();
    this.thresholds.matches = 0;
    return {
      accepted: 0,
      rejected: [],
      triggered: 0,
      matched: 0,
      actions: [],
      // Only a store takes the rows: without one, no room is made for them.
      stored: new ObservationColumnsBuilder(this.storesRows ? size : 1),
      deadLetters: [],
    };
  }

  private finish(work: BatchWork): BatchWork {
    work.matched = this.thresholds.matches;
    return work;
  }

  /** Observations [start, end) of the batch: checked, evaluated and merged, their rows and actions added in order. */
  private slice(batch: readonly Ingested[], start: number, end: number, work: BatchWork): void {
    const now = this.batchNow;
    // Check every observation first (dead letters in batch order), then evaluate them grouped by thing
    // type: one type's rules stay in the CPU cache across its observations instead of being evicted by
    // the other types'. Things of different types share nothing, and a
    // thing's observations keep their order within its group, so every result is the same.
    // The pending records and the groups are the engine's own, reused slice after slice: the
    // stream allocates no bookkeeping per observation, which the GC would pay for.
    const byType = this.groups;
    for (const group of byType.values()) group.size = 0;
    let accepted = 0;
    for (let i = start; i < end; i++) {
      const p = this.checkObservation(batch[i]!, i, now, work, accepted);
      if (p === undefined) continue;
      accepted++;
      if (p.replay) continue;
      const type = p.rt.thingType;
      let group = byType.get(type);
      if (group === undefined) byType.set(type, (group = { pending: [], size: 0 }));
      group.pending[group.size++] = p;
    }
    for (const group of byType.values()) {
      if (group.size === 0) continue;
      const list = group.pending;
      const typeRules = this.rules.ofType(list[0]!.rt.thingType);
      for (let i = 0; i < group.size; i++) this.advance(list[i]!, typeRules, now, work);
    }
    // Stored observations and actions in batch order, whatever order they were evaluated in.
    const keep = this.storesRows;
    const pending = this.pending;
    for (let i = 0; i < accepted; i++) {
      const p = pending[i]!;
      work.accepted++;
      if (keep) storeObservation(work.stored, p.position, p.rt, p.thingName, p.timestamp, p.os, p.nested, p);
      if (p.actions !== undefined) for (let j = 0; j < p.actions.length; j++) work.actions.push(p.actions[j]!);
    }
  }

  /** Checks one decoded input against its thing: a dead letter (undefined) or what `advance` evaluates. */
  private checkObservation(
    item: Ingested,
    index: number,
    now: number,
    work: BatchWork,
    slot: number,
  ): Pending | undefined {
    const o = item.observation;
    if (o === undefined) return this.refuse(item, item.refusal, index, now, work);
    const thingName = o.thingName;
    const rt = this.things.get(thingName);
    if (rt === undefined) {
      return this.reject(item, index, "unknown-thing", `thing ${thingName} is not known`, now, work, thingName);
    }
    const os = o.state;
    const nested = o.nested;
    const ctx = this.ctx;
    const latlng = os.latlng;
    ctx.hasCur = latlng !== undefined && latlng !== null && readGeoPoint(latlng, ctx.cur);
    const wrong = wrongType(os, rt.checks, latlng !== undefined && latlng !== null && !ctx.hasCur);
    if (wrong !== undefined) {
      return this.reject(
        item,
        index,
        "wrong-type",
        `state.${wrong} has the wrong type`,
        now,
        work,
        thingName,
        rt.domain,
      );
    }

    const pos = item.position;
    const st = rt.state;
    let p = this.pending[slot];
    if (p === undefined) p = this.pending[slot] = newPending(pos, rt);
    p.position = pos;
    p.rt = rt;
    p.thingName = thingName;
    p.timestamp = o.timestamp;
    p.os = os;
    p.nested = nested;
    p.hasCur = ctx.hasCur;
    p.lon = ctx.cur[0];
    p.lat = ctx.cur[1];
    p.replay = false;
    p.id = undefined;
    p.actions = undefined;
    p.stateBytes = item.stateBytes;
    p.stateStart = item.stateStart ?? -1;
    p.stateEnd = item.stateEnd ?? -1;
    if (pos.offset !== undefined && pos.partition !== undefined) {
      // A replay of what the state already holds (crash after flush, before commit): store it, do not count it again.
      const src = this.positions.sourceKey(pos.source, pos.partition);
      const offset = Number(pos.offset);
      if (st.lastSource === src && st.lastOffset !== undefined && offset <= st.lastOffset) {
        p.replay = true;
        return p;
      }
      st.lastSource = src;
      st.lastOffset = offset;
    }
    return p;
  }

  /** Evaluates one checked observation, counts thresholds and merges it into its thing's state. */
  private advance(p: Pending, typeRules: TypeRules | undefined, now: number, work: BatchWork): void {
    const { rt, os, nested } = p;
    const st = rt.state;
    const ctx = this.ctx;
    ctx.os = os;
    ctx.on = nested;
    ctx.ts = st.state;
    ctx.tn = st.nested;
    ctx.hasCur = p.hasCur;
    ctx.cur[0] = p.lon;
    ctx.cur[1] = p.lat;
    ctx.hasPrev = rt.hasPos;
    ctx.prev[0] = rt.lon;
    ctx.prev[1] = rt.lat;
    const seq = (st.seq ?? 0) + 1;
    st.seq = seq;

    // Live entries before this observation's matches: only they can need a reset.
    const armed = rt.armed;
    let fired = 0;
    if (typeRules !== undefined) {
      fired = this.thresholds.count(typeRules.general, ctx, rt, seq, now, fired);
      const own = typeRules.byThing.size === 0 ? undefined : typeRules.byThing.get(p.thingName);
      if (own !== undefined) fired = this.thresholds.count(own, ctx, rt, seq, now, fired);
    }

    // The prune first: the entries it ends are the ones the rules new to the thing take over.
    if (armed > 0 && st.thresholds !== undefined) {
      const live = this.thresholds.prune(st.thresholds, ctx, seq, now);
      rt.armed = live + this.thresholds.settle(st, seq, now);
    } else this.thresholds.settle(st, seq, now);

    // Merge after evaluating: expressions saw the state before this observation.
    if (rt.blank) {
      rt.blank = false;
      st.state = { ...os };
    } else Object.assign(st.state, os);
    if (nested !== undefined) st.nested = mergeNested(st.nested, nested);
    st.timestamp = p.timestamp;
    if (p.hasCur) {
      rt.hasPos = true;
      rt.lon = p.lon;
      rt.lat = p.lat;
    }
    this.checkpoints.changed(rt);
    if (fired > 0) {
      p.actions = [];
      this.trigger(fired, rt, pendingId(p), p.timestamp, os, nested, now, work, p.actions);
    }
  }

  private trigger(
    fired: number,
    rt: Runtime,
    observationId: string,
    timestamp: number,
    os: Record<string, unknown>,
    nested: NestedObservation[] | undefined,
    now: number,
    work: BatchWork,
    out: TriggeredAction[],
  ): void {
    const { info } = rt;
    const thingState = { ...rt.state.state };
    const observation: RulePayload["observation"] = { id: observationId, timestamp, state: os };
    if (nested) observation.nested = nested;
    for (let f = 0; f < fired; f++) {
      const rule = this.thresholds.fired[f]!.rule;
      const payload: RulePayload = {
        rule: { id: rule.id, name: rule.name, domain: rule.filter.domain },
        thing: { thingName: info.thingName, thingType: info.thingType, domain: info.domain, state: thingState },
        observation,
        timestamp: now,
        isoTimestamp: new Date(now).toISOString(),
      };
      if (rule.category !== undefined) payload.rule.category = rule.category;
      rule.actions.forEach((action, i) => {
        out.push({
          idempotencyKey: `${rule.id}:${info.thingName}:${observationId}:${i}`,
          ruleId: rule.id,
          thingName: info.thingName,
          type: action.type,
          config: action.config,
          payload,
        });
      });
      work.triggered++;
    }
  }

  /** An input the decode refused: a dead letter, readable in the domain of the thing it names when that is known. */
  private refuse(item: Ingested, refusal: Refusal, index: number, now: number, work: BatchWork): undefined {
    const name = refusal.thingName;
    const domain = name === undefined ? undefined : this.things.domainOf(name);
    return this.reject(item, index, refusal.reason, refusal.message, now, work, name, domain);
  }

  private reject(
    item: Ingested,
    index: number,
    reason: DeadLetterReason,
    message: string,
    now: number,
    work: BatchWork,
    thingName?: string,
    domain?: string,
  ): undefined {
    work.rejected.push({ index, reason, message });
    work.deadLetters.push(deadLetter(item, reason, message, now, thingName, domain));
    return undefined;
  }
}
