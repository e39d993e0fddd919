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
import {
  openObservations,
  type OpenedObservations,
  type StoredObservationInput,
} from "../../src/observations/index.js";
import type { Rule } from "../../src/rules/index.js";
import { openDatabase, startCheckpointer } from "../../src/store/index.js";

export interface DurableFigures {
  observations: number;
  /** The engine with state in memory and nothing written, on the same observations. */
  memoryRate: number;
  /** The engine with the observation store (its writer thread) and the SQLite state flush. */
  durableRate: number;
  /** The store path alone: batches handed to the writer thread back to back, rows stored per second. */
  storeRate: number;
  /** The variants asked for, in the same blocks. */
  variants: { name: string; rate: number }[];
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
  const clock = (): number => 1_763_000_000_000;
  const opened: OpenedDurable[] = [];
  try {
    const main = openDurable({ name: "durable", writerThread: true }, rules, resolveThing, discard, clock);
    opened.push(main);
    for (const v of variants) opened.push(openDurable(v, rules, resolveThing, discard, clock));
    const observations = main.observations;
    const memory = new RuleEngine({ resolveThing, state: new MemoryStateStore(), sink: discard, clock });
    memory.load(rules);
    const feed = async (engine: RuleEngine, start: number, end: number): Promise<void> => {
      const inFlight: Promise<unknown>[] = [];
      for (let s = start; s < end; s += chunkSize) {
        inFlight.push(engine.handle(decodeMessages(chunk(s, Math.min(end, s + chunkSize)))));
        if (inFlight.length >= IN_FLIGHT) await inFlight.shift();
      }
      await Promise.all(inFlight);
    };
    await feed(memory, 0, warm);
    for (const o of opened) await feed(o.engine, 0, warm);
    let memorySeconds = 0;
    for (let start = warm; start < warm + measured; start += BLOCK) {
      const end = Math.min(warm + measured, start + BLOCK);
      const t0 = performance.now();
      await feed(memory, start, end);
      memorySeconds += (performance.now() - t0) / 1000;
      for (const o of opened) {
        const t1 = performance.now();
        await feed(o.engine, start, end);
        o.seconds += (performance.now() - t1) / 1000;
      }
    }

    // The store path alone: the rows of the measured observations again, as new rows (no stream marks).
    const rowsOf = new RuleEngine({
      resolveThing,
      state: new MemoryStateStore(),
      sink: discard,
      clock,
      observations: { insertBatch: () => undefined },
    });
    rowsOf.load(rules);
    const rows: StoredObservationInput[][] = [];
    for (let s = warm; s < warm + measured; s += chunkSize) {
      rows.push(rowsOf.process(decodeMessages(chunk(s, Math.min(warm + measured, s + chunkSize)))).stored);
    }
    const t0 = performance.now();
    await Promise.all(rows.map((batch) => observations.store.insertBatch(batch.map(({ document }) => ({ document })))));
    const storeSeconds = (performance.now() - t0) / 1000;

    return {
      observations: measured,
      memoryRate: measured / memorySeconds,
      durableRate: measured / main.seconds,
      storeRate: measured / storeSeconds,
      variants: opened.slice(1).map((o) => ({ name: o.name, rate: measured / o.seconds })),
    };
  } finally {
    for (const o of opened) await o.close();
  }
}

/** A durable engine set up otherwise than the service's. */
export interface DurableVariant {
  name: string;
  /** The state's writer thread (false: the state flushed on the engine's thread). */
  writerThread: boolean;
}

interface OpenedDurable {
  name: string;
  engine: RuleEngine;
  observations: OpenedObservations;
  /** Time spent in the measured blocks. */
  seconds: number;
  close(): Promise<void>;
}

/** A durable engine as the service runs it, on a data directory of its own: observation store, state and dead letters. */
function openDurable(
  variant: DurableVariant,
  rules: readonly Rule[],
  resolveThing: ThingResolver,
  sink: { accept(actions: TriggeredAction[]): Promise<void> },
  clock: () => number,
): OpenedDurable {
  const dir = mkdtempSync(join(tmpdir(), "dms-bench-engine-"));
  const db = openDatabase({ dataDir: dir, migrations });
  const checkpointer = startCheckpointer(db);
  const observations = openObservations({ dataDir: dir, db, writerThread: true });
  const state = new SqliteStateStore(db, { writerThread: variant.writerThread });
  const engine = new RuleEngine({
    resolveThing,
    state,
    sink,
    observations: observations.store,
    deadLetters: new SqliteDeadLetterStore(db),
    clock,
  });
  engine.load(rules);
  return {
    name: variant.name,
    engine,
    observations,
    seconds: 0,
    async close() {
      await observations.close();
      await state.close();
      await checkpointer.stop();
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
