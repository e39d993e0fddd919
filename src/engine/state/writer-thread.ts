import { parentPort, receiveMessageOnPort, workerData } from "node:worker_threads";
import { openWriterConnection, type ThreadReply } from "../../store/index.js";
import { latestRows, receivedRows, stateWriter, valuesOf } from "./rows.js";
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
    if (writes.length > 0) {
      const rows = latestRows(writes.map((r) => receivedRows(r.rows)));
      db.transaction(() => write(rows.length, valuesOf(rows)))();
    }
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
