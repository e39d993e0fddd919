import { performance } from "node:perf_hooks";
import type { PartitionPositions } from "./positions.js";
import { turn, type StepQueue } from "./queue.js";
import type { Runtime, Runtimes } from "./runtimes.js";
import type { StateStore, ThingState } from "./state/index.js";

/** The longest a checkpoint's slice holds the event loop. */
const SLICE_MS = 5;
/** Thing states a checkpoint hands to the store at once (one transaction, or one message to a writer thread). */
const CHECKPOINT_STEP = 500;
/** Default of `CheckpointOptions.checkpointMs` (the service takes `DMS_ENGINE_CHECKPOINT_MS`). */
export const CHECKPOINT_MS = 5000;
/** Default of `CheckpointOptions.checkpointThings`. */
const CHECKPOINT_THINGS = 200_000;

export interface CheckpointOptions {
  /**
   * How long after a change the state is checkpointed, at the latest (`DMS_ENGINE_CHECKPOINT_MS`).
   * Infinity: only when asked (`checkpoint`), when the changed things pass `checkpointThings`, and
   * after a batch that cannot be replayed.
   */
  checkpointMs?: number | undefined;
  /** Changed things that start a checkpoint before `checkpointMs` is up: bounds what a crash replays. */
  checkpointThings?: number | undefined;
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

/**
 * The checkpoint loop: the things changed since the last checkpoint, written to the state store in
 * slices between batches, and the promise each batch's source waits for before it commits; and the
 * way back to the durable state when a batch or a checkpoint fails.
 */
export class Checkpoints {
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
  /**
   * A rewind could not read the durable state back (the store did not answer): memory may count
   * observations the durable state does not, so no batch is evaluated until a reload succeeds.
   */
  private reloadOwed = false;
  private readonly checkpointMs: number;
  private readonly checkpointThings: number;

  constructor(
    private readonly queue: StepQueue,
    private readonly state: StateStore,
    private readonly things: Runtimes,
    private readonly positions: PartitionPositions,
    options: CheckpointOptions,
  ) {
    this.checkpointMs = options.checkpointMs ?? CHECKPOINT_MS;
    this.checkpointThings = options.checkpointThings ?? CHECKPOINT_THINGS;
  }

  /** The thing's state changed: the next checkpoint writes it. */
  changed(rt: Runtime): void {
    if (!rt.dirty) {
      rt.dirty = true;
      this.dirty.push(rt);
    }
  }

  /**
   * A batch was evaluated and its actions accepted: the promise of the checkpoint that will cover
   * it, started now when the batch cannot be replayed or too many things wait, else by the timer.
   */
  covering(replayable: boolean): Promise<void> {
    const checkpointed = (this.next ??= deferred()).promise;
    if (!replayable || this.dirty.length >= this.checkpointThings) this.startCheckpoint();
    else if (Number.isFinite(this.checkpointMs))
      this.timer ??= setTimeout(() => this.startCheckpoint(), this.checkpointMs).unref();
    return checkpointed;
  }

  /**
   * Makes the state durable as it stands once every batch handed over so far is evaluated; resolves
   * once it is (the service's stop, tests, the benchmark).
   */
  checkpoint(): Promise<void> {
    return this.queue.after(() => {
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

  /**
   * Memory goes back to the durable state: a batch failed after its evaluation (the sink refused its
   * actions, a write failed), a checkpoint could not be written, or the source's partitions were
   * handed out again. Memory counted observations that the durable state has not, and a source hands
   * them over again: going back makes that a fresh evaluation, not a replay whose actions would never
   * be made. Runs on the queue, between batches. The checkpoint under way is dropped (what it wrote is
   * safe: each row is a thing as it stood between batches whose actions were accepted, with its own
   * last offset), and the batches not yet covered by a durable checkpoint learn it (`checkpointed`
   * rejects); a replayable source's batches are refused until its partitions follow on from what the
   * durable state covers (`RewoundError`, see `PartitionPositions.follows`).
   */
  async rewind(err: unknown, handedOut = false): Promise<void> {
    const current = this.current;
    if (current !== undefined) {
      current.cancelled = true;
      current.done.reject(err);
    }
    this.next?.reject(err);
    this.next = undefined;
    this.dirty = [];
    this.things.forget();
    this.positions.rewind(handedOut);
    this.reloadOwed = true;
    await this.reload();
  }

  /**
   * Before a batch is evaluated (on the queue): the durable state read back when a rewind could not
   * read it; throws while the store still does not answer, so that the batch is refused unevaluated
   * and its source hands it over again later.
   */
  async ensureLoaded(): Promise<void> {
    if (this.reloadOwed) await this.reload();
  }

  private async reload(): Promise<void> {
    await this.state.reload?.();
    this.things.forget();
    this.reloadOwed = false;
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
    const cp = await this.queue.run((): Checkpoint => {
      // In the table's order (it is clustered by thing name): a slice's rows then share leaf pages,
      // where in the order they changed nearly every row is a page of its own to write.
      const things = this.things.byName(this.dirty);
      const begun: Checkpoint = {
        things,
        positions: this.positions.snapshot(),
        done: (this.next ??= deferred()),
        writes: [],
        cancelled: false,
      };
      this.dirty = [];
      this.next = undefined;
      this.current = begun;
      return begun;
    });
    try {
      let taken = -1;
      while (taken < cp.things.length && !cp.cancelled) {
        await turn();
        await this.queue.run(() => (taken = this.writeSlice(cp, Math.max(0, taken))));
      }
      await Promise.all(cp.writes);
      if (cp.cancelled) return;
      this.positions.madeDurable(cp.positions);
      cp.done.resolve();
    } catch (err) {
      if (cp.cancelled) return;
      // Things whose marks this checkpoint cleared may not be written: memory goes back to the table.
      await this.queue.run(() => this.rewind(err)).catch(() => undefined);
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
      const written = this.state.flush(states);
      if (written !== undefined) cp.writes.push(written);
      at = end;
    } while (at < things.length && performance.now() - since < SLICE_MS);
    return at;
  }
}
