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
import { openObservations, type StoredObservationInput } from "../../src/observations/index.js";
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
): Promise<DurableFigures> {
  const dir = mkdtempSync(join(tmpdir(), "dms-bench-engine-"));
  const discard = { accept: async (_: TriggeredAction[]): Promise<void> => {} };
  const clock = (): number => 1_763_000_000_000;
  try {
    const db = openDatabase({ dataDir: dir, migrations });
    const checkpointer = startCheckpointer(db);
    const observations = openObservations({ dataDir: dir, db, writerThread: true });
    const durable = new RuleEngine({
      resolveThing,
      state: new SqliteStateStore(db),
      sink: discard,
      observations: observations.store,
      deadLetters: new SqliteDeadLetterStore(db),
      clock,
    });
    const memory = new RuleEngine({ resolveThing, state: new MemoryStateStore(), sink: discard, clock });
    durable.load(rules);
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
    await feed(durable, 0, warm);
    let memorySeconds = 0;
    let durableSeconds = 0;
    for (let start = warm; start < warm + measured; start += BLOCK) {
      const end = Math.min(warm + measured, start + BLOCK);
      const t0 = performance.now();
      await feed(memory, start, end);
      const t1 = performance.now();
      await feed(durable, start, end);
      memorySeconds += (t1 - t0) / 1000;
      durableSeconds += (performance.now() - t1) / 1000;
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

    await observations.close();
    await checkpointer.stop();
    db.close();
    return {
      observations: measured,
      memoryRate: measured / memorySeconds,
      durableRate: measured / durableSeconds,
      storeRate: measured / storeSeconds,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
