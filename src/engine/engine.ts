import { performance } from "node:perf_hooks";
import { ObservationColumnsBuilder, type ObservationColumns } from "../observations/index.js";
import type { Rule } from "../rule-model/index.js";
import { EvalContext, readGeoPoint, type CompileOptions } from "./compile/index.js";
import { deadLetter, observationId, storeObservation, wrongType } from "./checks.js";
import type { DeadLetter, DeadLetterReason, DeadLetterStore } from "./dead-letters/index.js";
import type { Ingested, Refusal } from "./decode.js";
import { RuleIndex, type TypeRules } from "./rule-index.js";
import { mergeNested, Runtimes, type Runtime } from "./runtimes.js";
import type { ActionSink, RulePayload, TriggeredAction } from "./sink.js";
import type { StateStore, ThingState } from "./state/index.js";
import type { ThingResolver } from "./things.js";
import { Thresholds } from "./thresholds.js";
import type { NestedObservation, SourcePosition } from "./types.js";

/** Observations evaluated between two looks at the clock in `evaluate`. */
const SLICE = 250;
/** The longest `evaluate` holds the event loop before it lets timers and I/O run (give or take a slice). */
const SLICE_MS = 5;

/** One turn of the event loop: timers and I/O callbacks run before the promise resolves. */
const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

export interface EngineOptions {
  resolveThing: ThingResolver;
  state: StateStore;
  sink: ActionSink;
  /**
   * Where accepted observations are written, one transaction per batch; a batch is handled once
   * its promise resolves (the engine evaluates the next batch meanwhile).
   */
  observations?: { insertColumns(columns: ObservationColumns): Promise<void> | void } | undefined;
  deadLetters?: Pick<DeadLetterStore, "insertBatch"> | undefined;
  clock?: () => number;
  compile?: CompileOptions;
  /** Find constant comparisons through sorted indexes (default); false scans every rule of the type. */
  indexRules?: boolean;
  /** Counters of the batch, for /metrics. */
  onBatch?: (result: BatchResult, deadLetters: readonly DeadLetter[]) => void;
}

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
  /** Every thing state this batch changed, once each: what the state store makes durable. */
  changed: ThingState[];
}

/** An observation that passed the checks, between `one` and `advance`. */
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
  };
}

function pendingId(p: Pending): string {
  return (p.id ??= observationId(p.position));
}

/**
 * The loop that joins sources, compiled rules and state: decode, check,
 * evaluate only the rules indexed for the thing, count thresholds, merge
 * state; then hand the batch's actions to the sink, store the batch and make
 * the state durable, in that order, before the source may commit. Its parts:
 * the rule index (`rule-index.ts`), the checks (`checks.ts`), the things'
 * records (`runtimes.ts`) and the thresholds (`thresholds.ts`).
 */
export class RuleEngine {
  private readonly rules: RuleIndex;
  private readonly things: Runtimes;
  private readonly thresholds: Thresholds;
  private readonly ctx = new EvalContext();
  /** Reused records of the current batch's accepted observations, in batch order. */
  private readonly pending: Pending[] = [];
  /** The current batch's pending records by thing type, reused. */
  private readonly groups = new Map<string, Pending[]>();
  /** `<source>:<partition>` by source and partition, made once rather than per observation. */
  private readonly sourceKeys = new Map<string, string[]>();
  private readonly clock: () => number;
  private queue: Promise<unknown> = Promise.resolve();
  private batchNumber = 0;
  /** The clock when the current batch began: one time for all of it (intervals, dead letters). */
  private batchNow = 0;

  constructor(private readonly options: EngineOptions) {
    this.clock = options.clock ?? Date.now;
    this.rules = new RuleIndex(options.compile, options.indexRules);
    this.things = new Runtimes(options.resolveThing, options.state);
    this.thresholds = new Thresholds(this.rules);
  }

  // ---- rules ----

  /** Replaces every rule (start-up). Throws nothing: a rule that does not compile is skipped and returned. */
  load(rules: readonly Rule[]): { id: string; error: string }[] {
    return this.rules.load(rules);
  }

  /**
   * A rule created, updated, disabled (`enabled` false) or removed (null).
   * Takes effect for the next observation; the thresholds of a rule whose
   * conditions changed start over, every other rule keeps its state.
   */
  apply(id: string, rule: Rule | null): void {
    if (this.rules.apply(id, rule)) this.options.state.dropRule(id);
  }

  get ruleCount(): number {
    return this.rules.size;
  }

  /**
   * A batch failed after its evaluation (the sink refused its actions, a write failed): memory
   * counted observations that the durable state has not, and the source will hand the batch
   * over again. Going back to the durable state makes that a fresh evaluation, not a replay
   * whose actions would never be made.
   */
  private async rewind(): Promise<void> {
    await this.options.state.reload?.();
    this.forgetThing();
  }

  /**
   * The source's partitions were handed out again (a Kafka rebalance): things this engine held
   * may now be another's, and things another held may now be this one's. Between batches, memory
   * is dropped, and each thing is read from the durable state when it is next seen, as the process
   * that gave its partition up left it.
   */
  resync(): Promise<void> {
    const run = this.queue.then(() => this.rewind());
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** A thing, its type or a domain changed in the registry: resolve it again on its next observation. */
  forgetThing(thingName?: string): void {
    this.things.forget(thingName);
  }

  // ---- observations ----

  /**
   * Evaluates a batch and resolves once it is stored, its actions are in the
   * sink and the state is durable: only then may a source commit. Batches
   * run one after the other, so state never gets ahead of handed-over actions.
   */
  handle(batch: readonly Ingested[]): Promise<BatchResult> {
    const evaluated = this.queue.then(() => this.run(batch));
    // The next batch is evaluated as soon as this one is handed to the store, not once stored: with
    // a writer thread, its inserts run beside the engine's next evaluation.
    this.queue = evaluated.catch(() => undefined);
    return evaluated.then(({ work, durable }) =>
      durable.then(
        () => {
          const result: BatchResult = {
            accepted: work.accepted,
            rejected: work.rejected,
            triggered: work.triggered,
            matched: work.matched,
          };
          this.options.onBatch?.(result, work.deadLetters);
          return result;
        },
        (err: unknown) => {
          // Batches evaluated after this one counted it in memory; the observation store refuses the
          // stream's later batches until this one is handed over again, and the engine goes back to
          // the durable state before its next batch.
          const rewound = this.queue.then(() => this.rewind());
          this.queue = rewound.catch(() => undefined);
          throw err;
        },
      ),
    );
  }

  private async run(batch: readonly Ingested[]): Promise<{ work: BatchWork; durable: Promise<unknown> }> {
    const work = await this.evaluate(batch);
    // Actions first: the time to their hand-over is the latency users see, and the stores' writes
    // (the larger part of a batch's cost) need not come before it. Then the rows and the state are
    // written side by side (each store may write on a thread of its own, beside the engine's next
    // batches), and the batch is done once both are durable. A crash before the state is durable
    // replays the batch: it is evaluated and stored again (rows already stored are skipped), and the
    // outbox drops the actions it already has by their idempotency keys. A crash after the state but
    // before the rows replays the batch too: the state says it was evaluated, so it is only stored.
    let durable: Promise<unknown>;
    try {
      if (work.actions.length > 0) await this.options.sink.accept(work.actions);
      const stored = Promise.resolve(this.options.observations?.insertColumns(work.stored.columns()));
      // Awaited by `handle`; marked handled here so that a failure before `handle` awaits it is not unhandled.
      stored.catch(() => undefined);
      await this.options.deadLetters?.insertBatch(work.deadLetters);
      // The state as this batch left it is taken now, before the next batch changes it.
      durable = Promise.all([stored, this.options.state.flush(work.changed)]);
      durable.catch(() => undefined);
    } catch (err) {
      await this.rewind();
      throw err;
    }
    return { work, durable };
  }

  /**
   * The synchronous heart: check, evaluate, count and merge state for a whole
   * decoded batch (refusals become dead letters in place). Writes nothing;
   * `handle` does that. Public for the benchmark, which measures it after the decode.
   */
  process(batch: readonly Ingested[]): BatchWork {
    const work = this.begin();
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
    const work = this.begin();
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

  /** A batch's work, empty: `slice` fills it. */
  private begin(): BatchWork {
    this.batchNow = this.clock();
    this.thresholds.matches = 0;
    this.batchNumber++;
    return {
      accepted: 0,
      rejected: [],
      triggered: 0,
      matched: 0,
      actions: [],
      stored: new ObservationColumnsBuilder(),
      deadLetters: [],
      changed: [],
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
    // the other 99 types' (1.5x on bench/engine). Things of different types share nothing, and a
    // thing's observations keep their order within its group, so every result is the same.
    // The pending records and the groups are the engine's own, reused slice after slice: the
    // stream allocates no bookkeeping per observation (GC was the largest single cost).
    const byType = this.groups;
    for (const group of byType.values()) group.length = 0;
    let accepted = 0;
    for (let i = start; i < end; i++) {
      const p = this.one(batch[i]!, i, now, work, accepted);
      if (p === undefined) continue;
      accepted++;
      if (p.replay) continue;
      const type = p.rt.thingType;
      const group = byType.get(type);
      if (group === undefined) byType.set(type, [p]);
      else group.push(p);
    }
    for (const group of byType.values()) {
      if (group.length === 0) continue;
      const typeRules = this.rules.ofType(group[0]!.rt.thingType);
      for (let i = 0; i < group.length; i++) this.advance(group[i]!, typeRules, now, work);
    }
    // Stored observations and actions in batch order, whatever order they were evaluated in.
    const keep = this.options.observations !== undefined;
    const pending = this.pending;
    for (let i = 0; i < accepted; i++) {
      const p = pending[i]!;
      work.accepted++;
      if (keep) storeObservation(work.stored, p.position, p.rt.info, p.thingName, p.timestamp, p.os, p.nested);
      if (p.actions !== undefined) for (let j = 0; j < p.actions.length; j++) work.actions.push(p.actions[j]!);
    }
  }

  /** Checks one decoded input against its thing: a dead letter (undefined) or what `advance` evaluates. */
  private one(item: Ingested, index: number, now: number, work: BatchWork, slot: number): Pending | undefined {
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
    if (pos.offset !== undefined && pos.partition !== undefined) {
      // A replay of what the state already holds (crash after flush, before commit): store it, do not count it again.
      const src = this.sourceKey(pos.source, pos.partition);
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

  /** What a thing's state records as the source of its last observation: the source, with the partition unless 0. */
  private sourceKey(source: string, partition: number): string {
    if (partition === 0) return source;
    let keys = this.sourceKeys.get(source);
    if (keys === undefined) this.sourceKeys.set(source, (keys = []));
    return (keys[partition] ??= `${source}:${partition}`);
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

    if (armed > 0 && st.thresholds !== undefined) rt.armed = this.thresholds.prune(st.thresholds, ctx, seq, now);

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
    if (rt.batch !== this.batchNumber) {
      rt.batch = this.batchNumber;
      work.changed.push(st);
    }
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

  /** The thing's last known state (for the rules dry-run and tests). */
  thingState(thingName: string): ThingState | undefined {
    return this.things.stateOf(thingName);
  }
}
