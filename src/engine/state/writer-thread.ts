import { parentPort, receiveMessageOnPort, workerData } from "node:worker_threads";
import { openWriterConnection, type ThreadReply } from "../../store/index.js";
import { emptyRows, stateWriter, type StateRows } from "./rows.js";
import type { StateWriterData, StateWriterRequest } from "./writer.js";

/**
 * The engine state writer: its own connection to the service's database, so
 * that the engine's thread only serializes a checkpoint's slice and posts it.
 * Group commit: the slices that arrived while a transaction ran are written
 * together in the next one, each thing once (its latest state): when the
 * writer falls behind, a commit covers several slices, and pages that several
 * of them dirtied are written to the WAL once.
 */
const { file, walAutocheckpoint } = workerData as StateWriterData;
// As the engine's own connection: where a checkpointer thread runs, commits here do not checkpoint.
const db = openWriterConnection(file, walAutocheckpoint);
const write = stateWriter(db);
const port = parentPort!;

port.on("message", (first: StateWriterRequest) => {
  const requests = [first];
  for (let next = receiveMessageOnPort(port); next !== undefined; next = receiveMessageOnPort(port)) {
    requests.push(next.message as StateWriterRequest);
  }
  const writes = requests.filter((r) => r.op === "write");
  let error: string | undefined;
  try {
    if (writes.length > 0) db.transaction(() => write(latest(writes.map((r) => r.rows))))();
  } catch (err) {
    error = err instanceof Error ? err.message : String(err);
  }
  for (const r of writes)
    port.postMessage((error === undefined ? { id: r.id, value: 0 } : { id: r.id, error }) satisfies ThreadReply);
  const close = requests.find((r) => r.op === "close");
  if (close !== undefined) {
    db.close();
    port.postMessage({ id: close.id, value: 0 } satisfies ThreadReply);
    port.close();
  }
});

/** The rows of several flushes, in order, each thing once with its last state. */
function latest(flushes: StateRows[]): StateRows {
  if (flushes.length === 1) return flushes[0]!;
  const last = new Map<string, [StateRows, number]>();
  for (const rows of flushes) for (let i = 0; i < rows.thingName.length; i++) last.set(rows.thingName[i]!, [rows, i]);
  const out = emptyRows();
  for (const [name, [rows, i]] of last) {
    out.thingName.push(name);
    out.ts.push(rows.ts[i]!);
    out.seq.push(rows.seq[i]!);
    out.lastSource.push(rows.lastSource[i] ?? null);
    out.lastOffset.push(rows.lastOffset[i] ?? null);
    out.doc.push(rows.doc[i]!);
  }
  return out;
}
