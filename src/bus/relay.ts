import { randomUUID } from "node:crypto";
import type { Logger } from "../observability/index.js";
import type { Db, Migration } from "../store/index.js";
import type { BusEventName, BusEvents, EventBus } from "./bus.js";

export const busMigrations: Migration[] = [
  {
    id: "bus-001",
    up: `CREATE TABLE bus_events (
      seq INTEGER PRIMARY KEY AUTOINCREMENT,
      origin TEXT NOT NULL,
      name TEXT NOT NULL,
      payload TEXT NOT NULL,
      at INTEGER NOT NULL
    );
    CREATE INDEX bus_events_at ON bus_events (at);`,
  },
];

export interface BusRelayOptions {
  db: Db;
  bus: EventBus;
  logger: Logger;
  /** How often the table is read for other processes' changes (ms). */
  pollMs?: number;
  /** How long a change stays in the table (ms): longer than any process can fall behind. */
  retentionMs?: number;
}

const DEFAULT_POLL_MS = 200;
const DEFAULT_RETENTION_MS = 5 * 60_000;
const PRUNE_EVERY_POLLS = 100;
const READ_LIMIT = 1000;

interface Row {
  seq: number;
  name: string;
  payload: string;
}

/**
 * Carries bus changes between processes that share one database (`DMS_ROLES`
 * split over several processes on one data directory): every change emitted
 * here is written to `bus_events`, and the changes other processes wrote are
 * read every `pollMs` and handed to this process's followers, so that a rule
 * changed through the REST process reaches the engine process within a
 * second, a deleted API key stops working in the proxy process, and so on.
 *
 * SQLite serializes writers, so sequence order is commit order and a reader
 * that has seen sequence n has seen everything before it. A change emitted
 * inside a transaction is written in that transaction: a rollback takes it back.
 */
export class BusRelay {
  /** This process's mark on its rows, which it skips when reading. */
  readonly origin = randomUUID();
  private readonly pollMs: number;
  private readonly retentionMs: number;
  private last = 0;
  private polls = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly write;
  private readonly read;
  private readonly prune;

  constructor(private readonly options: BusRelayOptions) {
    this.pollMs = options.pollMs ?? DEFAULT_POLL_MS;
    this.retentionMs = options.retentionMs ?? DEFAULT_RETENTION_MS;
    const { db } = options;
    this.write = db.prepare<[string, string, string, number]>(
      "INSERT INTO bus_events (origin, name, payload, at) VALUES (?, ?, ?, ?)",
    );
    this.read = db.prepare<[number, string, number], Row>(
      "SELECT seq, name, payload FROM bus_events WHERE seq > ? AND origin <> ? ORDER BY seq LIMIT ?",
    );
    this.prune = db.prepare<[number]>("DELETE FROM bus_events WHERE at < ?");
  }

  /** From now on: this process's changes are written, other processes' are read. */
  start(): void {
    const { db, bus } = this.options;
    this.last = db.prepare<[], { seq: number | null }>("SELECT max(seq) AS seq FROM bus_events").get()?.seq ?? 0;
    bus.relayTo((name, event) => this.publish(name, event));
    this.timer = setInterval(() => this.poll(), this.pollMs);
    this.timer.unref();
  }

  stop(): void {
    this.options.bus.relayTo(undefined);
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Reads and delivers what other processes changed since the last read; returns how many. */
  poll(): number {
    let delivered = 0;
    try {
      for (;;) {
        const rows = this.read.all(this.last, this.origin, READ_LIMIT);
        for (const row of rows) {
          this.last = row.seq;
          this.deliver(row);
          delivered++;
        }
        if (rows.length < READ_LIMIT) break;
      }
      if (++this.polls % PRUNE_EVERY_POLLS === 0) this.prune.run(Date.now() - this.retentionMs);
    } catch (err) {
      this.options.logger.error({ err }, "bus relay: reading other processes' changes failed; retrying");
    }
    return delivered;
  }

  private publish<K extends BusEventName>(name: K, event: BusEvents[K]): void {
    try {
      this.write.run(this.origin, name, JSON.stringify(event), Date.now());
    } catch (err) {
      // The change itself is made; failing its caller now would report it as not made.
      this.options.logger.error({ err, name }, "bus relay: a change could not be written for other processes");
    }
  }

  private deliver(row: Row): void {
    try {
      this.options.bus.deliverRemote(row.name as BusEventName, JSON.parse(row.payload) as BusEvents[BusEventName]);
    } catch (err) {
      this.options.logger.error({ err, seq: row.seq, name: row.name }, "bus relay: a follower failed");
    }
  }
}
