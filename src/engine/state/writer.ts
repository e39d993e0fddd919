import { ThreadCalls, type Db } from "../../store/index.js";
import { postedRows, type PostedRows, type StateRows } from "./rows.js";

export interface StateWriterData {
  file: string;
  /** The engine connection's setting, which a checkpointer thread raises: the writer's commits then leave checkpoints to it. */
  walAutocheckpoint: number;
}

export type StateWriterRequest = { op: "write"; id: number; rows: PostedRows } | { op: "close"; id: number };

/** The engine's side of the state writer thread (`writer-thread.ts`). */
export class StateWriter {
  private readonly thread: ThreadCalls<StateWriterRequest>;

  constructor(db: Db) {
    const data: StateWriterData = {
      file: db.name,
      walAutocheckpoint: Number(db.pragma("wal_autocheckpoint", { simple: true })),
    };
    this.thread = new ThreadCalls(new URL("./writer.mjs", import.meta.url), data, "engine state writer");
  }

  /** Resolves once the rows are committed (with whatever else the thread took in the same transaction). */
  async write(rows: StateRows): Promise<void> {
    await this.thread.call({ op: "write", rows: postedRows(rows) });
  }

  async close(): Promise<void> {
    await this.thread.close({ op: "close" });
  }
}
