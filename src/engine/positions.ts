import type { Ingested } from "./decode.js";

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

/**
 * Where the engine stands on each partition of a replayable source (`<source>:<partition>`): the
 * offset after the last one evaluated, the same as of the last durable checkpoint, and after a
 * rewind whether a partition's next batch follows on from the durable state.
 */
export class PartitionPositions {
  /** `<source>:<partition>` by source and partition, made once rather than per observation. */
  private readonly sourceKeys = new Map<string, string[]>();
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

  /**
   * Whether every position of the batch has an offset (a source that can hand it over again; an empty batch has nothing to make durable); throws
   * `RewoundError` for a partition that must follow on from what the durable state covers.
   */
  follows(batch: readonly Ingested[]): boolean {
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
  advance(batch: readonly Ingested[]): void {
    for (let i = 0; i < batch.length; i++) {
      const pos = batch[i]!.position;
      if (pos.offset === undefined || pos.partition === undefined) continue;
      const k = this.sourceKey(pos.source, pos.partition);
      const after = Number(pos.offset) + 1;
      if (after > (this.positions.get(k) ?? 0)) this.positions.set(k, after);
    }
  }

  /** What a thing's state records as the source of its last observation: the source, with the partition unless 0. */
  sourceKey(source: string, partition: number): string {
    if (partition === 0) return source;
    let keys = this.sourceKeys.get(source);
    if (keys === undefined) this.sourceKeys.set(source, (keys = []));
    return (keys[partition] ??= `${source}:${partition}`);
  }

  /** Each partition's next offset now: what the memory holds once a checkpoint begun now is durable. */
  snapshot(): Map<string, number> {
    return new Map(this.positions);
  }

  /** A checkpoint that began at `positions` (a `snapshot`) is durable. */
  madeDurable(positions: ReadonlyMap<string, number>): void {
    for (const [key, next] of positions) this.durablePositions.set(key, next);
  }

  /**
   * Memory went back to the durable state: each partition is back at its durable position, and its
   * next batch must follow on from it. After a hand-out the new owners start at the committed
   * offsets, whatever this engine held: every partition is forgotten.
   */
  rewind(handedOut: boolean): void {
    this.restart.clear();
    if (handedOut) {
      this.positions.clear();
      this.durablePositions.clear();
      return;
    }
    this.positions = new Map(this.durablePositions);
    for (const key of this.positions.keys()) this.restart.set(key, this.epochs.get(key) ?? 0);
  }
}
