import { loadConfig } from "../../src/config/index.js";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import type { TriggeredAction } from "../../src/actions/index.js";
import {
  SqliteDeadLetterStore,
  decodeMessages,
  MemoryStateStore,
  RuleEngine,
  SqliteStateStore,
  type RawObservation,
  type ThingResolver,
} from "../../src/engine/index.js";
import { migrations } from "../../src/migrations.js";
import { openObservations, type OpenedObservations, type ObservationColumns } from "../../src/observations/index.js";
import type { Rule } from "../../src/rules/index.js";
import { openDatabase, startCheckpointer } from "../../src/store/index.js";
import { statCpuSeconds, ThreadCpu } from "./threads.js";
import { WORKLOAD_EPOCH_MS } from "./workload.js";

/** The engine as the service runs it, by default (`DMS_ENGINE_*` in the environment change it, as for the service). */
const service = loadConfig(process.env);

export interface DurableFigures {
  observations: number;
  /** The engine with state in memory and nothing written, on the same observations. */
  memoryRate: number;
  /** The engine with the observation store (its writer thread) and the SQLite state flush. */
  durableRate: number;
  /** The store path alone: batches handed to the writer thread back to back, rows stored per second. */
  storeRate: number;
  /** The share of its time the durable engine's thread was on a core: the rest it waited, for the stores' threads or for a core. */
  durableBusy: number;
  /** The same share for the in-memory engine. */
  memoryBusy: number;
  /** The variants asked for, in the same blocks. */
  variants: { name: string; rate: number; busy: number; cpu: Map<string, number> }[];
  /** CPU seconds of the process's threads by what they do, in the measured blocks of the durable engine. */
  durableCpu: Map<string, number>;
  /** The same for the in-memory engine. */
  memoryCpu: Map<string, number>;
}

/** Chunks handed over before the first is handled, as the Kafka source does. */
const IN_FLIGHT = 3;
/** Observations per timed block; the two engines take turns block by block, under the same load. */
const BLOCK = 50_000;

/**
 * The durable engine against the in-memory one on the same observations, as the
 * service runs it: things warmed first (a stream's steady state: each thing's
 * state is known), then blocks of observations through each engine in turn, the
 * durable one fed like the Kafka source feeds it (a few chunks in flight). Then
 * the store path alone, fed the rows those observations make.
 */
export async function runDurable(
  rules: readonly Rule[],
  resolveThing: ThingResolver,
  chunk: (start: number, end: number) => RawObservation[],
  warm: number,
  measured: number,
  chunkSize: number,
  /** More durable engines, each on a data directory of its own, in the same blocks: in-run A/B of a store option. */
  variants: readonly DurableVariant[] = [],
): Promise<DurableFigures> {
  const discard = { accept: async (_: TriggeredAction[]): Promise<void> => {} };
  const clock = (): number => WORKLOAD_EPOCH_MS;
  const opened: OpenedDurable[] = [];
  const threads = new ThreadCpu();
  try {
    const main = openDurable(
      { name: "durable", writerThread: service.DMS_ENGINE_STATE_THREAD },
      rules,
      resolveThing,
      discard,
      clock,
      threads,
    );
    opened.push(main);
    for (const v of variants) opened.push(openDurable(v, rules, resolveThing, discard, clock, threads));
    // The writer threads' module loaders start once the threads run.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    threads.labelNew("module loaders");
    const observations = main.observations;
    const memory = new RuleEngine({ resolveThing, state: new MemoryStateStore(), sink: discard, clock });
    memory.load(rules);
    // A durable engine checkpoints every DMS_ENGINE_CHECKPOINT_MS of its own measured time, as the service's timer
    // would (a timer in real time would fire in the in-memory engine's blocks too).
    const feed = async (
      engine: RuleEngine,
      start: number,
      end: number,
      depth = IN_FLIGHT,
      durable?: OpenedDurable,
    ): Promise<void> => {
      const inFlight: Promise<unknown>[] = [];
      let since = performance.now();
      for (let s = start; s < end; s += chunkSize) {
        const handled = engine.handle(decodeMessages(chunk(s, Math.min(end, s + chunkSize))));
        // Awaited in order below: a failure of a later chunk while an earlier one is awaited (or after
        // an earlier one threw) is not an unhandled rejection that hides the first failure.
        handled.catch(() => undefined);
        inFlight.push(handled);
        if (inFlight.length >= depth) await inFlight.shift();
        if (durable === undefined) continue;
        const now = performance.now();
        durable.sinceCheckpoint += now - since;
        since = now;
        if (durable.sinceCheckpoint >= durable.checkpointMs) {
          durable.sinceCheckpoint = 0;
          durable.checkpointing = engine.checkpoint();
        }
      }
      await Promise.all(inFlight);
    };
    await feed(memory, 0, warm);
    for (const o of opened) {
      await feed(o.engine, 0, warm, o.inFlight);
      await o.engine.checkpoint();
      // Started by the first checkpoint that had rows.
      threads.labelNew(`state writer (${o.name})`);
    }
    let memorySeconds = 0;
    let memoryCpuSeconds = 0;
    const memoryCpu = new Map<string, number>();
    for (let start = warm; start < warm + measured; start += BLOCK) {
      const end = Math.min(warm + measured, start + BLOCK);
      const t0 = performance.now();
      const cpu0 = mainThreadCpuSeconds();
      const threads0 = threads.snapshot();
      await feed(memory, start, end);
      memorySeconds += (performance.now() - t0) / 1000;
      memoryCpuSeconds += mainThreadCpuSeconds() - cpu0;
      threads.add(threads0, threads.snapshot(), memoryCpu);
      for (const o of opened) {
        const t1 = performance.now();
        const cpu0 = mainThreadCpuSeconds();
        const threads0 = threads.snapshot();
        await feed(o.engine, start, end, o.inFlight, o);
        // A checkpoint under way is finished inside the block that began it (its slices would run in the
        // in-memory engine's block otherwise), and the last block ends with a last checkpoint: the
        // state of every measured observation is durable in the time measured.
        if (end === warm + measured) o.checkpointing = o.engine.checkpoint();
        await o.checkpointing;
        o.checkpointing = undefined;
        o.seconds += (performance.now() - t1) / 1000;
        o.busySeconds += mainThreadCpuSeconds() - cpu0;
        threads.add(threads0, threads.snapshot(), o.cpu);
      }
    }

    // The store path alone: the rows of the measured observations again, as new rows (no stream marks).
    const rowsOf = new RuleEngine({
      resolveThing,
      state: new MemoryStateStore(),
      sink: discard,
      clock,
      observations: { insertColumns: () => undefined },
    });
    rowsOf.load(rules);
    const rows: ObservationColumns[] = [];
    for (let s = warm; s < warm + measured; s += chunkSize) {
      const columns = rowsOf
        .process(decodeMessages(chunk(s, Math.min(warm + measured, s + chunkSize))))
        .stored.columns();
      columns.stream.fill(-1);
      rows.push(columns);
    }
    const t0 = performance.now();
    await Promise.all(rows.map((batch) => observations.store.insertColumns(batch)));
    const storeSeconds = (performance.now() - t0) / 1000;

    return {
      observations: measured,
      memoryRate: measured / memorySeconds,
      durableRate: measured / main.seconds,
      durableBusy: main.busySeconds / main.seconds,
      memoryBusy: memoryCpuSeconds / memorySeconds,
      storeRate: measured / storeSeconds,
      variants: opened
        .slice(1)
        .map((o) => ({ name: o.name, rate: measured / o.seconds, busy: o.busySeconds / o.seconds, cpu: o.cpu })),
      durableCpu: main.cpu,
      memoryCpu,
    };
  } finally {
    for (const o of opened) await o.close();
  }
}

/**
 * CPU time of this process's main thread (the engine's), from /proc: the event loop's own
 * utilization counts the time the thread waits for a core as busy, and on this shared box that
 * is much of it. 0 where /proc is not there.
 */
function mainThreadCpuSeconds(): number {
  return statCpuSeconds(`/proc/self/task/${process.pid}/stat`);
}

/** A durable engine set up otherwise than the service's. */
export interface DurableVariant {
  name: string;
  /** The state's writer thread (false: the state flushed on the engine's thread). */
  writerThread: boolean;
  /** Chunks handed over before the first is handled (default: as the Kafka source). */
  inFlight?: number;
  /**
   * The state in memory (nothing flushed), the observations stored as the service's: the cost of
   * the observation path alone, told apart from the state flush's.
   */
  stateInMemory?: boolean;
  /** Measured time between checkpoints (default: the service's, `DMS_ENGINE_CHECKPOINT_MS`). */
  checkpointMs?: number;
}

interface OpenedDurable {
  name: string;
  inFlight: number;
  engine: RuleEngine;
  observations: OpenedObservations;
  /** Time spent in the measured blocks. */
  seconds: number;
  /** Of that, the CPU time of the engine's thread (the rest it waited: for the stores' threads, or for a core). */
  busySeconds: number;
  /** CPU seconds of the process's threads in its measured blocks, by what they do. */
  cpu: Map<string, number>;
  checkpointMs: number;
  /** Measured milliseconds since the last checkpoint began. */
  sinceCheckpoint: number;
  /** The checkpoint under way, finished before its block ends. */
  checkpointing: Promise<void> | undefined;
  close(): Promise<void>;
}

/** A durable engine as the service runs it, on a data directory of its own: observation store, state and dead letters. */
function openDurable(
  variant: DurableVariant,
  rules: readonly Rule[],
  resolveThing: ThingResolver,
  sink: { accept(actions: TriggeredAction[]): Promise<void> },
  clock: () => number,
  threads: ThreadCpu,
): OpenedDurable {
  const dir = mkdtempSync(join(tmpdir(), "dms-bench-engine-"));
  const db = openDatabase({ dataDir: dir, migrations });
  const checkpointer = threads.label(["WAL checkpointer (dms.sqlite)"], () => startCheckpointer(db));
  // The store's clock is the observations' time, as for a live stream: their day is open (no thing
  // index per row, no column cache rebuilt beside the inserts). On the machine's clock the workload's
  // fixed timestamps are a past day, closed a minute into the run, and every row was a late one.
  const observations = threads.label(["WAL checkpointer (observations)", "observation writer", "column builder"], () =>
    openObservations({ dataDir: dir, db, writerThread: true, clock }),
  );
  const state = variant.stateInMemory
    ? new MemoryStateStore()
    : new SqliteStateStore(db, { writerThread: variant.writerThread });
  const engine = new RuleEngine({
    resolveThing,
    state,
    sink,
    observations: observations.store,
    deadLetters: new SqliteDeadLetterStore(db),
    clock,
    // Checkpoints as `feed` asks for them, on the benchmark's measured time.
    checkpointMs: Infinity,
  });
  engine.load(rules);
  return {
    name: variant.name,
    inFlight: variant.inFlight ?? IN_FLIGHT,
    engine,
    observations,
    seconds: 0,
    busySeconds: 0,
    cpu: new Map(),
    checkpointMs: variant.checkpointMs ?? service.DMS_ENGINE_CHECKPOINT_MS,
    sinceCheckpoint: 0,
    checkpointing: undefined,
    async close() {
      await observations.close();
      if (state instanceof SqliteStateStore) await state.close();
      await checkpointer.stop();
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
