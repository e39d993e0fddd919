import type { Db } from "../store/index.js";
import type { BusEventStore, StoredBusEvent } from "./store.js";

/** The relay's changes in the SQLite database the processes share (`busMigrations`). */
export class SqliteBusEventStore implements BusEventStore {
  private readonly write;
  private readonly read;
  private readonly forget;

  constructor(private readonly db: Db) {
    this.write = db.prepare<[string, string, string, number]>(
      "INSERT INTO bus_events (origin, name, payload, at) VALUES (?, ?, ?, ?)",
    );
    this.read = db.prepare<[number, string, number], StoredBusEvent>(
      "SELECT seq, name, payload FROM bus_events WHERE seq > ? AND origin <> ? ORDER BY seq LIMIT ?",
    );
    this.forget = db.prepare<[number]>("DELETE FROM bus_events WHERE at < ?");
  }

  async lastSeq(): Promise<number> {
    return this.db.prepare<[], { seq: number | null }>("SELECT max(seq) AS seq FROM bus_events").get()?.seq ?? 0;
  }

  async append(origin: string, name: string, payload: string, at: number): Promise<void> {
    this.write.run(origin, name, payload, at);
  }

  async readAfter(seq: number, origin: string, limit: number): Promise<StoredBusEvent[]> {
    return this.read.all(seq, origin, limit);
  }

  async prune(at: number): Promise<void> {
    this.forget.run(at);
  }
}
