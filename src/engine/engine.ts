import type { ObservationColumns } from "../observations/index.js";
import type { Rule } from "../rule-model/index.js";
import type { CompileOptions } from "./compile/index.js";
import { Checkpoints, type CheckpointOptions } from "./checkpoints.js";
import type { DeadLetter, DeadLetterStore } from "./dead-letters/index.js";
import type { Ingested } from "./decode.js";
import { BatchEvaluator, type BatchResult, type BatchWork } from "./evaluation.js";
import { PartitionPositions } from "./positions.js";
import { StepQueue } from "./queue.js";
import { RuleIndex } from "./rule-index.js";
import { Runtimes } from "./runtimes.js";
import type { ActionSink } from "./sink.js";
import type { StateStore, ThingState } from "./state/index.js";
import type { ThingResolver } from "./things.js";
import { Thresholds } from "./thresholds.js";

export { CHECKPOINT_MS } from "./checkpoints.js";
export { RewoundError } from "./positions.js";
export type { BatchResult, BatchWork, Rejected } from "./evaluation.js";

export interface EngineOptions extends CheckpointOptions {
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

/** What `handle` resolves with: the batch's result and when a source may commit past it. */
export interface HandledBatch extends BatchResult {
  /**
   * Resolves once a checkpoint covering the batch is durable: a source that can replay commits its
   * position then. Rejects when the engine went back to an earlier checkpoint first (a later batch
   * failed): the source hands everything after its committed position over again.
   */
  checkpointed: Promise<void>;
}

/**
 * The loop that joins sources, compiled rules and state: decode, check,
 * evaluate only the rules indexed for the thing, count thresholds, merge
 * state; then hand the batch's actions to the sink, store the batch and make
 * the state durable, in that order, before the source may commit. Its parts:
 * the evaluation (`evaluation.ts`: the rule index, the checks, the things'
 * records and the thresholds), the partitions' positions (`positions.ts`) and
 * the checkpoint loop (`checkpoints.ts`), one step at a time on one queue.
 */
export class RuleEngine {
  private readonly rules: RuleIndex;
  private readonly things: Runtimes;
  private readonly queue = new StepQueue();
  private readonly positions = new PartitionPositions();
  private readonly checkpoints: Checkpoints;
  private readonly evaluator: BatchEvaluator;

  constructor(private readonly options: EngineOptions) {
    this.rules = new RuleIndex(options.compile, options.indexRules);
    this.things = new Runtimes(options.resolveThing, options.state);
    this.checkpoints = new Checkpoints(this.queue, options.state, this.things, this.positions, options);
    this.evaluator = new BatchEvaluator(
      this.rules,
      this.things,
      new Thresholds(this.rules),
      this.positions,
      this.checkpoints,
      options.clock ?? Date.now,
      options.observations !== undefined,
    );
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
   * The source's partitions were handed out again (a Kafka rebalance): things this engine held
   * may now be another's, and things another held may now be this one's. Between batches, memory
   * is dropped, and each thing is read from the durable state when it is next seen, as the last
   * checkpoint of the process that gave its partition up left it; the new owner resumes at the
   * committed offset, which no checkpoint has passed, and what follows it is evaluated again.
   */
  resync(): Promise<void> {
    return this.queue.run(() => this.checkpoints.rewind(new Error("the partitions were handed out again"), true));
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
    // The next batch is evaluated as soon as this one is handed to the store, not once stored: with
    // a writer thread, its inserts run beside the engine's next evaluation.
    const evaluated = this.queue.run(() => this.run(batch));
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
        this.queue.run(() => this.checkpoints.rewind(err)).catch(() => undefined);
        throw err;
      }
      if (!replayable) await checkpointed;
      this.options.onBatch?.(result, deadLetters);
      return { ...result, checkpointed };
    });
  }

  /**
   * Evaluates a batch and hands it over; resolves with what `handle` keeps of it while its rows are
   * stored: its counts and dead letters, not its `BatchWork`, whose rows kept until the writer
   * answers would outlive the young generation and cost the GC a copy.
   */
  private async run(batch: readonly Ingested[]): Promise<{
    result: BatchResult;
    deadLetters: DeadLetter[];
    stored: Promise<void>;
    checkpointed: Promise<void>;
    replayable: boolean;
  }> {
    await this.checkpoints.ensureLoaded();
    const replayable = this.positions.follows(batch);
    const work = await this.evaluator.evaluate(batch);
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
      await this.checkpoints.rewind(err);
      throw err;
    }
    this.positions.advance(batch);
    const checkpointed = this.checkpoints.covering(replayable);
    const result: BatchResult = {
      accepted: work.accepted,
      rejected: work.rejected,
      triggered: work.triggered,
      matched: work.matched,
    };
    return { result, deadLetters: work.deadLetters, stored, checkpointed, replayable };
  }

  // ---- checkpoints ----

  /**
   * Makes the state durable as it stands once every batch handed over so far is evaluated; resolves
   * once it is (the service's stop, tests, the benchmark).
   */
  checkpoint(): Promise<void> {
    return this.checkpoints.checkpoint();
  }

  /** Stops the checkpoint timer and writes a last checkpoint. */
  close(): Promise<void> {
    return this.checkpoints.close();
  }

  /**
   * The synchronous heart: check, evaluate, count and merge state for a whole decoded batch
   * (refusals become dead letters in place). Writes nothing; `handle` does that. Public for the
   * benchmark, which measures it after the decode.
   */
  process(batch: readonly Ingested[]): BatchWork {
    return this.evaluator.process(batch);
  }

  /** As `process`, with turns of the event loop between slices (`BatchEvaluator.evaluate`). */
  evaluate(batch: readonly Ingested[]): Promise<BatchWork> {
    return this.evaluator.evaluate(batch);
  }

  /** The thing's last known state (for the rules dry-run and tests). */
  thingState(thingName: string): ThingState | undefined {
    return this.things.stateOf(thingName);
  }
}
