import { parentPort, workerData } from "node:worker_threads";
import { ObservationPartitions } from "./partitions.js";
import { openWriterConnection, type ThreadReply } from "../store/index.js";
import type { WriterRequest, WriterData } from "./writer.js";

/**
 * The observation writer: its own connection to the observation file, so the
 * engine's thread only serializes a batch and posts it; the inserts, the
 * retention deletes and the index builds run here, on the machine's other core.
 * Requests are handled one at a time, in the order posted.
 */
const { file, walAutocheckpoint, clockOffsetMs } = workerData as WriterData;
// A checkpointer thread copies the WAL back (`open.ts`): a commit that did it would hold the next batch up on its fsyncs.
const db = openWriterConnection(file, walAutocheckpoint);
// The column cache is built by a thread of its own (`columns-thread.ts`), not between inserts.
const partitions = new ObservationPartitions(db, () => Date.now() + clockOffsetMs, false);
const port = parentPort!;

port.on("message", (request: WriterRequest) => {
  let reply: ThreadReply;
  try {
    switch (request.op) {
      case "insert":
        reply = { id: request.id, value: partitions.insert(request.rows) };
        break;
      case "delete":
        reply = { id: request.id, value: partitions.deleteOlderThan(request.cutoff, request.limit) };
        break;
      case "count":
        reply = { id: request.id, value: partitions.count() };
        break;
      case "maintain":
        partitions.maintain(true);
        reply = { id: request.id, value: 0 };
        break;
      case "close":
        db.close();
        port.postMessage({ id: request.id, value: 0 } satisfies ThreadReply);
        port.close();
        return;
    }
  } catch (err) {
    reply = { id: request.id, error: err instanceof Error ? err.message : String(err) };
  }
  port.postMessage(reply);
});
