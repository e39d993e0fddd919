/**
 * One engine of bench/engine's durable section, in a process of its own (see durable.ts): it
 * encodes the workload's observations, warms its engine on the first `warm` of them, then runs the
 * blocks its parent asks for and answers what each took. An engine per process, as the service
 * runs it: engines sharing one heap made every major GC mark all of their states, and the durable
 * engines paid most for it (their writer threads wait for the cores the GC helpers take).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import {
  decodeMessages,
  MemoryStateStore,
  RuleEngine,
  SqliteDeadLetterStore,
  SqliteStateStore,
} from "../../src/engine/index.js";
import { migrations } from "../../src/migrations.js";
import { openObservations, type ObservationColumns, type OpenedObservations } from "../../src/observations/index.js";
import { openDatabase, startCheckpointer } from "../../src/store/index.js";
import type { EngineReply, EngineRequest, EngineSpec } from "./durable.js";
import { statCpuSeconds, ThreadCpu } from "./threads.js";
import { Encoded, thingResolver, workload, WORKLOAD_EPOCH_MS } from "./workload.js";

const spec = JSON.parse(process.argv[2]!) as EngineSpec;
const send = (reply: EngineReply): void => void process.send!(reply);
const discard = { accept: async (): Promise<void> => {} };
const clock = (): number => WORKLOAD_EPOCH_MS;

const w = workload();
const resolveThing = thingResolver(w.things);
const data = new Encoded(w, spec.observations);
const threads = new ThreadCpu();

/** The stores of a durable engine, on a data directory of its own, as the service opens them. */
interface Stores {
  observations: OpenedObservations;
  state: MemoryStateStore;
  deadLetters: SqliteDeadLetterStore;
  close(): Promise<void>;
}

function openStores(): Stores {
  const dir = mkdtempSync(join(tmpdir(), "dms-bench-engine-"));
  const db = openDatabase({ dataDir: dir, migrations });
  const checkpointer = threads.label(["WAL checkpointer (dms.sqlite)"], () => startCheckpointer(db));
  // The store's clock is the observations' time, as for a live stream: their day is open (no thing
  // index per row, no column cache rebuilt beside the inserts). On the machine's clock the workload's
  // fixed timestamps are a past day, closed a minute into the run, and every row was a late one.
  const observations = threads.label(["WAL checkpointer (observations)", "observation writer", "column builder"], () =>
    openObservations({ dataDir: dir, db, writerThread: true, clock }),
  );
  const state = spec.stateInMemory
    ? new MemoryStateStore()
    : new SqliteStateStore(db, { writerThread: spec.writerThread });
  return {
    observations,
    state,
    deadLetters: new SqliteDeadLetterStore(db),
    async close() {
      await observations.close();
      if (state instanceof SqliteStateStore) await state.close();
      await checkpointer.stop();
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const stores = spec.durable ? openStores() : undefined;
const engine = new RuleEngine({
  resolveThing,
  state: stores?.state ?? new MemoryStateStore(),
  sink: discard,
  clock,
  observations: stores?.observations.store,
  deadLetters: stores?.deadLetters,
  // Checkpoints as `feed` asks for them, on the benchmark's measured time.
  checkpointMs: Infinity,
});
engine.load(w.rules);

/** Measured milliseconds since the last checkpoint began (a timer in real time would also count the other engines' blocks). */
let sinceCheckpoint = 0;
let checkpointing: Promise<void> | undefined;

/** Observations [start, end) through the engine as the Kafka source hands them over: `inFlight` chunks at a time. */
async function feed(start: number, end: number, measured: boolean): Promise<void> {
  const inFlight: Promise<unknown>[] = [];
  let since = performance.now();
  for (let s = start; s < end; s += spec.chunkSize) {
    const handled = engine.handle(decodeMessages(data.chunk(s, Math.min(end, s + spec.chunkSize))));
    // Awaited in order below: a failure of a later chunk while an earlier one is awaited (or after
    // an earlier one threw) is not an unhandled rejection that hides the first failure.
    handled.catch(() => undefined);
    inFlight.push(handled);
    if (inFlight.length >= spec.inFlight) await inFlight.shift();
    if (!measured || !spec.durable) continue;
    const now = performance.now();
    sinceCheckpoint += now - since;
    since = now;
    if (sinceCheckpoint >= spec.checkpointMs) {
      sinceCheckpoint = 0;
      checkpointing = engine.checkpoint();
    }
  }
  await Promise.all(inFlight);
}

/** CPU seconds of the engine's thread (this process's main thread), from /proc: waiting for a core is not counted. */
const engineThreadSeconds = (): number => statCpuSeconds(`/proc/self/task/${process.pid}/stat`);

/**
 * The process's threads' CPU from the start of one block to the start of the next: what a store's
 * threads finish while the other engines run their blocks is this engine's work too.
 */
const cpu = new Map<string, number>();
let lastSnapshot: Map<number, number> | undefined;
function chargeSinceLastBlock(): void {
  const now = threads.snapshot();
  if (lastSnapshot !== undefined) threads.add(lastSnapshot, now, cpu);
  lastSnapshot = now;
}

async function block(start: number, end: number, last: boolean): Promise<EngineReply> {
  chargeSinceLastBlock();
  const t0 = performance.now();
  const busy0 = engineThreadSeconds();
  await feed(start, end, true);
  // A checkpoint under way is finished inside the block that began it, and the last block ends with
  // a last checkpoint: the state of every measured observation is durable in the time measured.
  if (spec.durable && last) checkpointing = engine.checkpoint();
  await checkpointing;
  checkpointing = undefined;
  return { kind: "block", seconds: (performance.now() - t0) / 1000, busySeconds: engineThreadSeconds() - busy0 };
}

/** The store path alone: the rows of observations [start, end) again, as new rows (no stream marks), written back to back. */
async function storePath(start: number, end: number): Promise<EngineReply> {
  const rowsOf = new RuleEngine({
    resolveThing,
    state: new MemoryStateStore(),
    sink: discard,
    clock,
    observations: { insertColumns: () => undefined },
  });
  rowsOf.load(w.rules);
  const rows: ObservationColumns[] = [];
  for (let s = start; s < end; s += spec.chunkSize) {
    const columns = rowsOf.process(decodeMessages(data.chunk(s, Math.min(end, s + spec.chunkSize)))).stored.columns();
    columns.stream.fill(-1);
    rows.push(columns);
  }
  const t0 = performance.now();
  await Promise.all(rows.map((batch) => stores!.observations.store.insertColumns(batch)));
  return { kind: "store", seconds: (performance.now() - t0) / 1000 };
}

async function answer(request: EngineRequest): Promise<EngineReply> {
  switch (request.cmd) {
    case "block":
      return block(request.start, request.end, request.last);
    case "finish":
      chargeSinceLastBlock();
      return { kind: "finish", cpu: [...cpu] };
    case "store":
      return storePath(request.start, request.end);
    case "close":
      await stores?.close();
      return { kind: "closed" };
  }
}

process.on("message", (request: EngineRequest) => {
  answer(request).then(
    (reply) => {
      send(reply);
      if (reply.kind === "closed") process.disconnect();
    },
    (err: unknown) => send({ kind: "error", message: err instanceof Error ? (err.stack ?? err.message) : String(err) }),
  );
});

if (spec.durable) {
  // The writer threads' module loaders start once the threads run.
  await new Promise((resolve) => setTimeout(resolve, 1000));
  threads.labelNew("module loaders");
}
// Warm up untimed (a stream's steady state: each thing's state is known), then say so.
await feed(0, spec.warm, false);
if (spec.durable) {
  await engine.checkpoint();
  // Started by the first checkpoint that had rows.
  threads.labelNew("state writer");
}
send({ kind: "ready" });
