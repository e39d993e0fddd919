import { fork, type ChildProcess } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { loadConfig } from "../../src/config/index.js";

/** The engine as the service runs it, by default (`DMS_ENGINE_*` in the environment change it, as for the service). */
const service = loadConfig(process.env);
const here = dirname(fileURLToPath(import.meta.url));

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
  /** CPU seconds of the durable engine's process's threads by what they do, over its measured blocks. */
  durableCpu: Map<string, number>;
  /** The same for the in-memory engine. */
  memoryCpu: Map<string, number>;
}

/** Chunks handed over before the first is handled, as the Kafka source does. */
const IN_FLIGHT = 3;
/** Observations per timed block; the engines take turns block by block, under the same load. */
const BLOCK = 50_000;

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

/** What an engine's process (durable-engine.ts) runs: passed as its one argument, as JSON. */
export interface EngineSpec {
  name: string;
  /** With the observation store and the state store (else everything in memory, nothing written). */
  durable: boolean;
  writerThread: boolean;
  stateInMemory: boolean;
  inFlight: number;
  checkpointMs: number;
  /** The workload's observations [0, observations) are encoded; [0, warm) warm the engine. */
  observations: number;
  warm: number;
  chunkSize: number;
}

export type EngineRequest =
  | { cmd: "block"; start: number; end: number; last: boolean }
  | { cmd: "finish" }
  | { cmd: "store"; start: number; end: number }
  | { cmd: "close" };

export type EngineReply =
  | { kind: "ready" }
  | { kind: "block"; seconds: number; busySeconds: number }
  | { kind: "finish"; cpu: [string, number][] }
  | { kind: "store"; seconds: number }
  | { kind: "closed" }
  | { kind: "error"; message: string };

/** An engine's process and its answers, one request at a time. */
class EngineProcess {
  private readonly child: ChildProcess;
  private waiting: { resolve(reply: EngineReply): void; reject(err: Error): void } | undefined;
  readonly ready: Promise<EngineReply>;
  seconds = 0;
  busySeconds = 0;

  constructor(readonly spec: EngineSpec) {
    this.child = fork(join(here, "durable-engine.ts"), [JSON.stringify(spec)], {
      execArgv: ["--import", "tsx"],
      stdio: "inherit",
    });
    this.ready = this.next();
    this.child.on("message", (reply: EngineReply) => {
      const waiting = this.waiting;
      this.waiting = undefined;
      if (reply.kind === "error") waiting?.reject(new Error(`${spec.name}: ${reply.message}`));
      else waiting?.resolve(reply);
    });
    this.child.on("exit", (code) => this.waiting?.reject(new Error(`${spec.name}: its process ended (${code})`)));
  }

  private next(): Promise<EngineReply> {
    return new Promise((resolve, reject) => (this.waiting = { resolve, reject }));
  }

  async ask<K extends EngineReply["kind"]>(
    request: EngineRequest,
    kind: K,
  ): Promise<Extract<EngineReply, { kind: K }>> {
    const reply = this.next();
    this.child.send(request);
    const answer = await reply;
    if (answer.kind !== kind) throw new Error(`${this.spec.name}: ${answer.kind} where ${kind} was due`);
    return answer as Extract<EngineReply, { kind: K }>;
  }

  kill(): void {
    if (this.child.exitCode === null) this.child.kill("SIGKILL");
  }
}

/**
 * The durable engine against the in-memory one on the same observations, as the service runs it:
 * each engine in a process of its own (durable-engine.ts), things warmed first (a stream's steady
 * state: each thing's state is known), then blocks of observations through each engine in turn,
 * under the same load, the durable one fed like the Kafka source feeds it (a few chunks in flight).
 * Then the store path alone, fed the rows those observations make.
 */
export async function runDurable(
  warm: number,
  measured: number,
  chunkSize: number,
  /** More durable engines, each on a data directory of its own, in the same blocks: in-run A/B of a store option. */
  variants: readonly DurableVariant[] = [],
): Promise<DurableFigures> {
  const base = { observations: warm + measured, warm, chunkSize, checkpointMs: service.DMS_ENGINE_CHECKPOINT_MS };
  const specs: EngineSpec[] = [
    { ...base, name: "in-memory", durable: false, writerThread: false, stateInMemory: true, inFlight: IN_FLIGHT },
    {
      ...base,
      name: "durable",
      durable: true,
      writerThread: service.DMS_ENGINE_STATE_THREAD,
      stateInMemory: false,
      inFlight: IN_FLIGHT,
    },
    ...variants.map((v): EngineSpec => ({
      ...base,
      name: v.name,
      durable: true,
      writerThread: v.writerThread,
      stateInMemory: v.stateInMemory ?? false,
      inFlight: v.inFlight ?? IN_FLIGHT,
      checkpointMs: v.checkpointMs ?? base.checkpointMs,
    })),
  ];
  const engines = specs.map((spec) => new EngineProcess(spec));
  try {
    await Promise.all(engines.map((e) => e.ready));
    for (let start = warm; start < warm + measured; start += BLOCK) {
      const end = Math.min(warm + measured, start + BLOCK);
      for (const e of engines) {
        const done = await e.ask({ cmd: "block", start, end, last: end === warm + measured }, "block");
        e.seconds += done.seconds;
        e.busySeconds += done.busySeconds;
      }
    }
    const cpu: Map<string, number>[] = [];
    for (const e of engines) cpu.push(new Map((await e.ask({ cmd: "finish" }, "finish")).cpu));
    const [memory, durable, ...others] = engines as [EngineProcess, EngineProcess, ...EngineProcess[]];
    const store = await durable.ask({ cmd: "store", start: warm, end: warm + measured }, "store");
    for (const e of engines) await e.ask({ cmd: "close" }, "closed");
    return {
      observations: measured,
      memoryRate: measured / memory.seconds,
      durableRate: measured / durable.seconds,
      durableBusy: durable.busySeconds / durable.seconds,
      memoryBusy: memory.busySeconds / memory.seconds,
      storeRate: measured / store.seconds,
      variants: others.map((o, i) => ({
        name: o.spec.name,
        rate: measured / o.seconds,
        busy: o.busySeconds / o.seconds,
        cpu: cpu[i + 2]!,
      })),
      durableCpu: cpu[1]!,
      memoryCpu: cpu[0]!,
    };
  } finally {
    for (const e of engines) e.kill();
  }
}
