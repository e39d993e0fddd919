import { randomUUID } from "node:crypto";
import type { Logger } from "../observability/index.js";
import type { BusEventName, BusEvents, EventBus } from "./bus.js";
import type { BusEventStore, StoredBusEvent } from "./store.js";

export interface BusRelayOptions {
  /** The table of changes the processes share. */
  store: BusEventStore;
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

/**
 * Carries bus changes between processes that share one database (`DMS_ROLES`
 * split over several processes on one data directory): every change emitted
 * here is written to the store, and the changes other processes wrote are
 * read every `pollMs` and handed to this process's followers, so that a rule
 * changed through the REST process reaches the engine process within a
 * second, a deleted API key stops working in the proxy process, and so on.
 *
 * The store keeps sequence order as commit order, so a reader that has seen
 * sequence n has seen everything before it (`BusEventStore`).
 */
export class BusRelay {
  /** This process's mark on its rows, which it skips when reading. */
  readonly origin = randomUUID();
  private readonly store: BusEventStore;
  private readonly pollMs: number;
  private readonly retentionMs: number;
  private last = 0;
  private polls = 0;
  private timer: NodeJS.Timeout | undefined;
  /** The read under way: a timer tick or a caller meanwhile waits for it instead of reading the same rows. */
  private polling: Promise<number> | undefined;

  constructor(private readonly options: BusRelayOptions) {
    this.store = options.store;
    this.pollMs = options.pollMs ?? DEFAULT_POLL_MS;
    this.retentionMs = options.retentionMs ?? DEFAULT_RETENTION_MS;
  }

  /** From now on: this process's changes are written, other processes' are read. */
  async start(): Promise<void> {
    this.last = await this.store.lastSeq();
    this.options.bus.relayTo((name, event) => this.publish(name, event));
    this.timer = setInterval(() => void this.poll(), this.pollMs);
    this.timer.unref();
  }

  stop(): void {
    this.options.bus.relayTo(undefined);
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Reads and delivers what other processes changed since the last read; resolves how many. */
  poll(): Promise<number> {
    this.polling ??= this.read().finally(() => (this.polling = undefined));
    return this.polling;
  }

  private async read(): Promise<number> {
    let delivered = 0;
    try {
      for (;;) {
        const rows = await this.store.readAfter(this.last, this.origin, READ_LIMIT);
        for (const row of rows) {
          this.last = row.seq;
          this.deliver(row);
          delivered++;
        }
        if (rows.length < READ_LIMIT) break;
      }
      if (++this.polls % PRUNE_EVERY_POLLS === 0) await this.store.prune(Date.now() - this.retentionMs);
    } catch (err) {
      this.options.logger.error({ err }, "bus relay: reading other processes' changes failed; retrying");
    }
    return delivered;
  }

  /** In line with `emit`: the store writes before this returns, inside the change's transaction if any. */
  private publish<K extends BusEventName>(name: K, event: BusEvents[K]): void {
    // The change itself is made; failing its caller now would report it as not made.
    const failed = (err: unknown): void =>
      this.options.logger.error({ err, name }, "bus relay: a change could not be written for other processes");
    try {
      this.store.append(this.origin, name, JSON.stringify(event), Date.now()).catch(failed);
    } catch (err) {
      failed(err);
    }
  }

  private deliver(row: StoredBusEvent): void {
    try {
      this.options.bus.deliverRemote(row.name as BusEventName, JSON.parse(row.payload) as BusEvents[BusEventName]);
    } catch (err) {
      this.options.logger.error({ err, seq: row.seq, name: row.name }, "bus relay: a follower failed");
    }
  }
}
