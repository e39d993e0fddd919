import { randomUUID } from "node:crypto";
import type { Logger } from "../observability/index.js";
import type { BusEventName, BusEvents, EventBus } from "./bus.js";
import type { BusEventStore, StoredBusEvent } from "./store.js";
import { pollingWakeup, type RelayWakeup } from "./wakeup.js";

export interface BusRelayOptions {
  /** The table of changes the processes share. */
  store: BusEventStore;
  bus: EventBus;
  logger: Logger;
  /** How often the table is read for other processes' changes (ms), when no `wakeup` is given. */
  pollMs?: number;
  /** When to read the table: every `pollMs` unless given (PostgreSQL: `PgNotifyWakeup`). */
  wakeup?: RelayWakeup;
  /** How long a change stays in the table (ms): longer than any process can fall behind. */
  retentionMs?: number;
}

const DEFAULT_POLL_MS = 200;
const DEFAULT_RETENTION_MS = 5 * 60_000;
const PRUNE_EVERY_MS = 20_000;
const READ_LIMIT = 1000;

/**
 * Carries bus changes between processes that share one database (`DMS_ROLES`
 * split over several processes on one data directory): every change emitted
 * here is written to the store, and the changes other processes wrote are
 * read when the `wakeup` says (every `pollMs`, or as PostgreSQL notifies them)
 * and handed to this process's followers, so that a rule changed through the
 * REST process reaches the engine process within a second, a deleted API key
 * stops working in the proxy process, and so on.
 *
 * The store keeps sequence order as commit order, so a reader that has seen
 * sequence n has seen everything before it (`BusEventStore`).
 */
export class BusRelay {
  /** This process's mark on its rows, which it skips when reading. */
  readonly origin = randomUUID();
  private readonly store: BusEventStore;
  private readonly wakeup: RelayWakeup;
  private readonly retentionMs: number;
  private last = 0;
  private prunedAt = Date.now();
  /** The read under way: a caller meanwhile waits for it instead of reading the same rows. */
  private polling: Promise<number> | undefined;
  /** The read after the one under way: a wakeup during a read may announce rows that read missed. */
  private next: Promise<number> | undefined;
  /** The writes of this process's changes not yet stored. */
  private readonly appends = new Set<Promise<void>>();

  constructor(private readonly options: BusRelayOptions) {
    this.store = options.store;
    this.wakeup = options.wakeup ?? pollingWakeup(options.pollMs ?? DEFAULT_POLL_MS);
    this.retentionMs = options.retentionMs ?? DEFAULT_RETENTION_MS;
  }

  /** From now on: this process's changes are written, other processes' are read. */
  async start(): Promise<void> {
    this.last = await this.store.lastSeq();
    this.options.bus.relayTo((name, event) => this.publish(name, event));
    await this.wakeup.start(() => void this.poll());
  }

  /** Stops following, and resolves once the reads and writes under way are done (the store may close then). */
  async stop(): Promise<void> {
    this.options.bus.relayTo(undefined);
    await this.wakeup.stop();
    while (this.polling || this.appends.size > 0) {
      await Promise.allSettled([this.polling, this.next, ...this.appends]);
    }
  }

  /**
   * Reads and delivers what other processes changed since the last read; resolves how many.
   * Asked during a read, it reads once more after it (however often it is asked meanwhile).
   */
  poll(): Promise<number> {
    if (this.polling) {
      this.next ??= this.polling.then(() => {
        this.next = undefined;
        return this.poll();
      });
      return this.next;
    }
    this.polling = this.read().finally(() => (this.polling = undefined));
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
      if (Date.now() - this.prunedAt >= PRUNE_EVERY_MS) {
        this.prunedAt = Date.now();
        await this.store.prune(this.prunedAt - this.retentionMs);
      }
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
      const append = this.store.append(this.origin, name, JSON.stringify(event), Date.now()).catch(failed);
      this.appends.add(append);
      void append.finally(() => this.appends.delete(append));
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
