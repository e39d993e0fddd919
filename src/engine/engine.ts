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

/** Thing states a checkpoint hands to the store at once (one transaction, or one message to a writer thread). */
const CHECKPOINT_STEP = 500;
/** Default of `EngineOptions.checkpointMs` (the service takes `DMS_ENGINE_CHECKPOINT_MS`). */
export const CHECKPOINT_MS = 5000;
/** Default of `EngineOptions.checkpointThings`. */
const CHECKPOINT_THINGS = 200_000;

/**
 * A batch of a replayable source was refused without being evaluated: the engine went back to its
 * last checkpoint (a batch failed) and the batch does not follow on from it. The source hands its
 * partition over again from its committed offset, which no checkpoint has passed.
 */
export class RewoundError extends Error {
  constructor(partition: string) {
    super(
      `the engine went back to its last checkpoint: ${partition} is to be handed over again from its committed offset`,
    );
    this.name = "RewoundError";
  }
}

/** A promise and its settlement, for the batches a checkpoint will cover. */
interface Deferred {
  promise: Promise<void>;
  resolve: () => void;
  reject: (err: unknown) => void;
}

function deferred(): Deferred {
  let resolve!: () => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // Whoever holds a batch's `checkpointed` may never look at it (a source that does not commit).
  promise.catch(() => undefined);
  return { promise, resolve, reject };
}

/** One checkpoint under way: the things it takes, in slices, and what it makes durable. */
interface Checkpoint {
  things: Runtime[];
  /** Next offset of each partition as of the checkpoint's start: what the memory holds once it is durable. */
  positions: Map<string, number>;
  done: Deferred;
  /** Writes handed to a store that writes on a thread of its own. */
  writes: Promise<void>[];
  /** A rewind dropped the memory this checkpoint was taking: nothing more of it is written. */
  cancelled: boolean;
}

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
  /**
   * How long after a change the state is checkpointed, at the latest (`DMS_ENGINE_CHECKPOINT_MS`).
   * Infinity: only when asked (`checkpoint`), when the changed things pass `checkpointThings`, and
   * after a batch that cannot be replayed.
   */
  checkpointMs?: number;
  /** Changed things that start a checkpoint before `checkpointMs` is up: bounds what a crash replays. */
  checkpointThings?: number;
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

/** What `handle` resolves with: the batch's result and when a source may commit past it. */
export interface HandledBatch extends BatchResult {
  /**
   * Resolves once a checkpoint covering the batch is durable: a source that can replay commits its
   * position then. Rejects when the engine went back to an earlier checkpoint first (a later batch
   * failed): the source hands everything after its committed position over again.
   */
  checkpointed: Promise<void>;
}

/** The in-memory side of one batch, before anything is written or handed over. */
export interface BatchWork extends BatchResult {
  actions: TriggeredAction[];
  /** The rows of the accepted observations, in batch order, built as they are accepted. */
  stored: ObservationColumnsBuilder;
  deadLetters: DeadLetter[];
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
  private readonly groups = new Map<string, TypeGroup>();
  /** `<source>:<partition>` by source and partition, made once rather than per observation. */
  private readonly sourceKeys = new Map<string, string[]>();
  private readonly clock: () => number;
  private queue: Promise<unknown> = Promise.resolve();
  /** Things changed since a checkpoint took them (`Runtime.dirty`), in the order first changed. */
  private dirty: Runtime[] = [];
  /** What the batches evaluated since the last checkpoint began wait for: the next checkpoint. */
  private next: Deferred | undefined;
  /** The checkpoint being written, if any. */
  private current: Checkpoint | undefined;
  /** The loop writing checkpoints one after the other, while there is one to write. */
  private checkpointing: Promise<void> | undefined;
  /** Another checkpoint was asked for while one was under way. */
  private checkpointAgain = false;
  private timer: NodeJS.Timeout | undefined;
  private readonly checkpointMs: number;
  private readonly checkpointThings: number;
  /** Per `<source>:<partition>`: the offset after the last one evaluated. */
  private positions = new Map<string, number>();
  /** The same, as of the last durable checkpoint (or where the partition was first seen: the table covers all before it). */
  private durablePositions = new Map<string, number>();
  /** Per partition, the source's latest going-back (`SourcePosition.epoch`) the engine has seen. */
  private readonly epochs = new Map<string, number>();
  /**
   * Partitions whose next batch must follow on from `positions` (the engine went back to a
   * checkpoint), with the epoch they were at: see `follows`.
   */
  private readonly restart = new Map<string, number>();
  /** The clock when the current batch began: one time for all of it (intervals, dead letters). */
  private batchNow = 0;

  constructor(private readonly options: EngineOptions) {
    this.clock = options.clock ?? Date.now;
    this.checkpointMs = options.checkpointMs ?? CHECKPOINT_MS;
    this.checkpointThings = options.checkpointThings ?? CHECKPOINT_THINGS;
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
   * Memory goes back to the durable state: a batch failed after its evaluation (the sink refused its
   * actions, a write failed), a checkpoint could not be written, or the source's partitions were
   * handed out again. Memory counted observations that the durable state has not, and a source hands
   * them over again: going back makes that a fresh evaluation, not a replay whose actions would never
   * be made. Runs on the queue, between batches. The checkpoint under way is dropped (what it wrote is
   * safe: each row is a thing as it stood between batches whose actions were accepted, with its own
   * last offset), and the batches not yet covered by a durable checkpoint learn it (`checkpointed`
   * rejects); a replayable source's batches are refused until its partitions follow on from what the
   * durable state covers (`RewoundError`, see `follows`).
   */
  private async rewind(err: unknown, handedOut = false): Promise<void> {
    const current = this.current;
    if (current !== undefined) {
      current.cancelled = true;
      current.done.reject(err);
    }
    this.next?.reject(err);
    this.next = undefined;
    this.dirty = [];
    await this.options.state.reload?.();
    this.forgetThing();
    this.restart.clear();
    if (handedOut) {
      // The new owners of the partitions start at the committed offsets, whatever this engine held.
      this.positions.clear();
      this.durablePositions.clear();
      return;
    }
    this.positions = new Map(this.durablePositions);
    for (const key of this.positions.keys()) this.restart.set(key, this.epochs.get(key) ?? 0);
  }

  /**
   * The source's partitions were handed out again (a Kafka rebalance): things this engine held
   * may now be another's, and things another held may now be this one's. Between batches, memory
   * is dropped, and each thing is read from the durable state when it is next seen, as the last
   * checkpoint of the process that gave its partition up left it; the new owner resumes at the
   * committed offset, which no checkpoint has passed, and what follows it is evaluated again.
   */
  resync(): Promise<void> {
    const run = this.queue.then(() => this.rewind(new Error("the partitions were handed out again"), true));
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** A thing, its type or a domain changed in the registry: resolve it again on its next observation. */
  forgetThing(thingName?: string): void {
    this.things.forget(thingName);
  }

  // ---- observations ----

  /**
   * Evaluates a batch; resolves once its actions are in the sink and its rows are stored. Its state
   * becomes durable with the next checkpoint (`checkpointed`), which a replayable source (an offset
   * at every position: Kafka) waits for before it commits; a batch that cannot be replayed (any
   * position without an offset) forces a checkpoint and resolves only once it is durable. Batches run
   * one after the other, so state never gets ahead of handed-over actions.
   */
  handle(batch: readonly Ingested[]): Promise<HandledBatch> {
    const evaluated = this.queue.then(() => this.run(batch));
    // The next batch is evaluated as soon as this one is handed to the store, not once stored: with
    // a writer thread, its inserts run beside the engine's next evaluation.
    this.queue = evaluated.catch(() => undefined);
    return evaluated.then(async ({ result, deadLetters, stored, checkpointed, replayable }) => {
      try {
        await stored;
      } catch (err) {
        // Batches evaluated after this one counted it in memory; the observation store refuses the
        // stream's later batches until this one is handed over again, and the engine goes back to
        // the durable state before its next batch. A checkpoint may have counted this batch before
        // its rows failed: safe, its actions were accepted, and the source hands it over again from
        // its committed offset (not past this batch: it commits a batch once its rows are stored),
        // which stores the rows as a replay's.
        const rewound = this.queue.then(() => this.rewind(err));
        this.queue = rewound.catch(() => undefined);
        throw err;
      }
      if (!replayable) await checkpointed;
      this.options.onBatch?.(result, deadLetters);
      return { ...result, checkpointed };
    });
  }

  /**
   * What `handle` keeps of a batch while its rows are stored: its counts and dead letters, not its
   * `BatchWork`. The rows' columns (every document's JSON) are copied to the writer thread when
   * handed over; kept until the writer answers, a few batches later, they outlive the young
   * generation and are copied, promoted and swept by the GC. (Not measured alone: with the state
   * rows' statement change, the durable engine thread's GC time over the in-memory one's went from
   * 576 to 415 ms in a profile of 400,000 observations.)
   */
  private async run(batch: readonly Ingested[]): Promise<{
    result: BatchResult;
    deadLetters: DeadLetter[];
    stored: Promise<void>;
    checkpointed: Promise<void>;
    replayable: boolean;
  }> {
    const replayable = this.follows(batch);
    const work = await this.evaluate(batch);
    // Actions first: the time to their hand-over is the latency users see, and the stores' writes
    // (the larger part of a batch's cost) need not come before it. The rows are written beside the
    // engine's next batches; the state waits for a checkpoint, taken between batches once every
    // batch before it had its actions accepted, so a durable state never counts an observation
    // whose actions were not made. A crash before the checkpoint replays the batch: it is evaluated
    // and stored again (rows already stored are skipped), and the outbox drops the actions it already
    // has by their idempotency keys. A crash after the checkpoint but before the commit replays the
    // batch too: the state says it was evaluated, so it is only stored.
    let stored: Promise<void>;
    try {
      if (work.actions.length > 0) await this.options.sink.accept(work.actions);
      stored = Promise.resolve(this.options.observations?.insertColumns(work.stored.columns()));
      // Awaited by `handle`; marked handled here so that a failure before `handle` awaits it is not unhandled.
      stored.catch(() => undefined);
      await this.options.deadLetters?.insertBatch(work.deadLetters);
    } catch (err) {
      await this.rewind(err);
      throw err;
    }
    this.advancePositions(batch);
    const checkpointed = (this.next ??= deferred()).promise;
    if (!replayable || this.dirty.length >= this.checkpointThings) this.startCheckpoint();
    else if (Number.isFinite(this.checkpointMs))
      this.timer ??= setTimeout(() => this.startCheckpoint(), this.checkpointMs).unref();
    const result: BatchResult = {
      accepted: work.accepted,
      rejected: work.rejected,
      triggered: work.triggered,
      matched: work.matched,
    };
    return { result, deadLetters: work.deadLetters, stored, checkpointed, replayable };
  }

  /**
   * Whether every position of the batch has an offset (a source that can hand it over again; an empty batch has nothing to make durable); throws
   * `RewoundError` for a partition that must follow on from what the durable state covers.
   */
  private follows(batch: readonly Ingested[]): boolean {
    let replayable = true;
    let key: string | undefined;
    for (let i = 0; i < batch.length; i++) {
      const pos = batch[i]!.position;
      if (pos.offset === undefined || pos.partition === undefined) {
        replayable = false;
        continue;
      }
      const k = this.sourceKey(pos.source, pos.partition);
      if (k === key) continue;
      key = k;
      const offset = Number(pos.offset);
      const epoch = pos.epoch ?? 0;
      const next = this.positions.get(k);
      const restartFrom = this.restart.get(k);
      if (restartFrom !== undefined) {
        // After a rewind a partition's batch is evaluated only when it follows on from what the
        // durable state covers: it starts at or before that offset, or the source fetched it after
        // going back to its committed offset (a later epoch; the committed offset never passes the
        // durable state, and it may be followed by a gap of offsets: transaction markers, compaction).
        // Anything else was handed over before the source went back: evaluated on the rewound memory,
        // it would count later observations first, and the replay would then skip the earlier ones.
        if (epoch <= restartFrom && next !== undefined && offset > next) throw new RewoundError(k);
        this.restart.delete(k);
      }
      this.epochs.set(k, epoch);
      if (next === undefined) {
        // First seen (since the start or a rebalance): the source starts at its committed offset,
        // and the state table covers everything before it.
        this.positions.set(k, offset);
        this.durablePositions.set(k, offset);
      }
    }
    return replayable;
  }

  /** Moves each partition's position past the batch's last offset of it. */
  private advancePositions(batch: readonly Ingested[]): void {
    for (let i = 0; i < batch.length; i++) {
      const pos = batch[i]!.position;
      if (pos.offset === undefined || pos.partition === undefined) continue;
      const k = this.sourceKey(pos.source, pos.partition);
      const after = Number(pos.offset) + 1;
      if (after > (this.positions.get(k) ?? 0)) this.positions.set(k, after);
    }
  }

  // ---- checkpoints ----

  /**
   * Makes the state durable as it stands once every batch handed over so far is evaluated; resolves
   * once it is (the service's stop, tests, the benchmark).
   */
  checkpoint(): Promise<void> {
    return this.queue.then(() => {
      const covering = (this.next ??= deferred()).promise;
      this.startCheckpoint();
      return covering;
    });
  }

  /** Stops the checkpoint timer and writes a last checkpoint. */
  async close(): Promise<void> {
    await this.checkpoint();
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** A checkpoint now, or right after the one under way. */
  private startCheckpoint(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.checkpointing !== undefined) {
      this.checkpointAgain = true;
      return;
    }
    this.checkpointing = this.checkpoints();
  }

  private async checkpoints(): Promise<void> {
    try {
      do {
        this.checkpointAgain = false;
        await this.writeCheckpoint();
      } while (this.checkpointAgain);
    } finally {
      // In the same step as the last look at `checkpointAgain`: a request after it starts a new loop.
      this.checkpointing = undefined;
    }
  }

  /**
   * One checkpoint: begins between two batches (every batch evaluated so far had its actions
   * accepted) and covers them all. The changed things are serialized in slices of about `SLICE_MS`,
   * each on the queue between batches, so that neither the event loop nor the batches wait for the
   * whole of it. A thing's dirty mark is cleared as it is serialized: a later batch that changes it
   * before that is in this checkpoint already (its row carries its own last offset, so the row is
   * consistent however late it is taken), one that changes it after puts it on the next.
   */
  private async writeCheckpoint(): Promise<void> {
    const begun = this.queue.then((): Checkpoint => {
      // In the table's order (it is clustered by thing name): a slice's rows then share leaf pages,
      // where in the order they changed nearly every row is a page of its own to write.
      const things = this.things.byName(this.dirty);
      const cp: Checkpoint = {
        things,
        positions: new Map(this.positions),
        done: (this.next ??= deferred()),
        writes: [],
        cancelled: false,
      };
      this.dirty = [];
      this.next = undefined;
      this.current = cp;
      return cp;
    });
    this.queue = begun.catch(() => undefined);
    const cp = await begun;
    try {
      let taken = -1;
      while (taken < cp.things.length && !cp.cancelled) {
        await turn();
        const step = this.queue.then(() => (taken = this.writeSlice(cp, Math.max(0, taken))));
        this.queue = step.catch(() => undefined);
        await step;
      }
      await Promise.all(cp.writes);
      if (cp.cancelled) return;
      for (const [key, next] of cp.positions) this.durablePositions.set(key, next);
      cp.done.resolve();
    } catch (err) {
      if (cp.cancelled) return;
      // Things whose marks this checkpoint cleared may not be written: memory goes back to the table.
      const rewound = this.queue.then(() => this.rewind(err));
      this.queue = rewound.catch(() => undefined);
      await rewound.catch(() => undefined);
    } finally {
      if (this.current === cp) this.current = undefined;
    }
  }

  /** Hands the store the checkpoint's things from `from` on for about `SLICE_MS`; returns where it stopped. */
  private writeSlice(cp: Checkpoint, from: number): number {
    const things = cp.things;
    const since = performance.now();
    let at = from;
    do {
      if (cp.cancelled) return things.length;
      const end = Math.min(things.length, at + CHECKPOINT_STEP);
      const states: ThingState[] = [];
      for (let i = at; i < end; i++) {
        const rt = things[i]!;
        rt.dirty = false;
        states.push(rt.state);
      }
      // An empty first step still writes what `dropRule` changed.
      const written = this.options.state.flush(states);
      if (written !== undefined) cp.writes.push(written);
      at = end;
    } while (at < things.length && performance.now() - since < SLICE_MS);
    return at;
  }

  /**
   * The synchronous heart: check, evaluate, count and merge state for a whole
   * decoded batch (refusals become dead letters in place). Writes nothing;
   * `handle` does that. Public for the benchmark, which measures it after the decode.
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
      stored: new ObservationColumnsBuilder(this.options.observations === undefined ? 1 : size),
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
    // the other 99 types' (1.5x on bench/engine). Things of different types share nothing, and a
    // thing's observations keep their order within its group, so every result is the same.
    // The pending records and the groups are the engine's own, reused slice after slice: the
    // stream allocates no bookkeeping per observation (GC was the largest single cost).
    const byType = this.groups;
    for (const group of byType.values()) group.size = 0;
    let accepted = 0;
    for (let i = start; i < end; i++) {
      const p = this.one(batch[i]!, i, now, work, accepted);
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
    const keep = this.options.observations !== undefined;
    const pending = this.pending;
    for (let i = 0; i < accepted; i++) {
      const p = pending[i]!;
      work.accepted++;
      if (keep) storeObservation(work.stored, p.position, p.rt, p.thingName, p.timestamp, p.os, p.nested, p);
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
    p.stateBytes = item.stateBytes;
    p.stateStart = item.stateStart ?? -1;
    p.stateEnd = item.stateEnd ?? -1;
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
    if (!rt.dirty) {
      rt.dirty = true;
      this.dirty.push(rt);
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
