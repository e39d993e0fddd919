import { parentPort, workerData } from "node:worker_threads";
import { packChunk } from "./kafka-chunks.js";
import { KafkaConsumerLoop, type Handled, type SourceLog } from "./kafka-loop.js";
import type { FetchThreadData, FromFetchThread, ToFetchThread } from "./kafka-protocol.js";

/**
 * The Kafka fetch thread: the consumer loop (fetch, record batches decoded into messages, offsets
 * resolved and committed, heartbeats, seeks, rebalances) on a thread of its own, so that the
 * engine's thread only decodes and evaluates. Each chunk is posted packed; the loop awaits the
 * engine's answers as it would await the engine's `handle` on its own thread.
 */
const port = parentPort!;
const post = (message: FromFetchThread, transfer?: ArrayBuffer[]): void => port.postMessage(message, transfer);

/** Errors as their message, name and kafkajs type: an Error does not survive the post whole. */
function plain(obj: object): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(obj))
    out[k] = v instanceof Error ? { name: v.name, message: v.message, type: (v as { type?: unknown }).type } : v;
  return out;
}

const log: SourceLog = {
  info: (obj, msg) => post({ op: "log", level: "info", obj: plain(obj), msg }),
  warn: (obj, msg) => post({ op: "log", level: "warn", obj: plain(obj), msg }),
  debug: (obj, msg) => post({ op: "log", level: "debug", obj: plain(obj), msg }),
};

interface Settle {
  resolve: () => void;
  reject: (err: Error) => void;
}

/** Chunks posted, awaiting the engine's `handled`, and then its `checkpointed`. */
const handling = new Map<number, { resolve: (h: Handled) => void; reject: (err: Error) => void }>();
const checkpointing = new Map<number, Settle>();
/** The loop's `checkpoint` requests awaiting the engine. */
const checkpoints = new Map<number, Settle>();
let nextId = 0;

const loop = new KafkaConsumerLoop({
  ...(workerData as FetchThreadData),
  logger: log,
  onRebalance: () => post({ op: "rebalance" }),
  onCrash: (err, restart) => post({ op: "crash", message: err.message, restart }),
  onLag: (partition, lag) => post({ op: "lag", partition, lag }),
  onCommit: (partition, offset) => post({ op: "commit", partition, offset }),
  checkpoint: () =>
    new Promise<void>((resolve, reject) => {
      const id = nextId++;
      checkpoints.set(id, { resolve, reject });
      post({ op: "checkpoint", id });
    }),
});
void loop.ready.then(() => post({ op: "ready" }));

function handle(chunk: Parameters<typeof packChunk>[0]): Promise<Handled> {
  const id = nextId++;
  const packed = packChunk(chunk);
  return new Promise<Handled>((resolve, reject) => {
    handling.set(id, { resolve, reject });
    post({ op: "chunk", id, chunk: packed }, [packed.bytes]);
  });
}

port.on("message", (m: ToFetchThread) => {
  switch (m.op) {
    case "start":
      loop.start(handle).then(
        () => post({ op: "started" }),
        (err: unknown) => post({ op: "start-failed", message: err instanceof Error ? err.message : String(err) }),
      );
      return;
    case "stop":
      void loop.stop().finally(() => {
        post({ op: "stopped" });
        port.close();
      });
      return;
    case "handled": {
      const h = handling.get(m.id);
      handling.delete(m.id);
      if (!m.checkpointed) return h?.resolve(undefined);
      const checkpointed = new Promise<void>((resolve, reject) => checkpointing.set(m.id, { resolve, reject }));
      // The loop may never look at it (a seek since).
      checkpointed.catch(() => undefined);
      return h?.resolve({ checkpointed });
    }
    case "failed":
      handling.get(m.id)?.reject(new Error(m.message));
      handling.delete(m.id);
      return;
    case "checkpointed":
      checkpointing.get(m.id)?.resolve();
      checkpointing.delete(m.id);
      return;
    case "not-checkpointed":
      checkpointing.get(m.id)?.reject(new Error(m.message));
      checkpointing.delete(m.id);
      return;
    case "checkpoint-done": {
      const c = checkpoints.get(m.id);
      checkpoints.delete(m.id);
      if (m.error === undefined) c?.resolve();
      else c?.reject(new Error(m.error));
      return;
    }
  }
});
