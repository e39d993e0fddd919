import type pg from "pg";
import type { Logger } from "../observability/index.js";
import type { PgPool } from "../store/index.js";
import type { RelayWakeup } from "./wakeup.js";

/** The channel `bus_events`' trigger notifies with each new row's sequence (`busPgMigrations`). */
export const BUS_CHANNEL = "dms_bus";

export interface PgNotifyWakeupOptions {
  /** The pool the listening connection is taken from (it holds one of the pool's connections). */
  pool: PgPool;
  logger: Logger;
  /** How long to wait before connecting again after the connection was lost (ms). */
  retryMs?: number;
  /** How often the listening connection is checked (ms): a connection that died silently delivers nothing. */
  heartbeatMs?: number;
}

const DEFAULT_RETRY_MS = 500;
const DEFAULT_HEARTBEAT_MS = 5000;

/**
 * Wakes a relay as PostgreSQL notifies new changes: one connection `LISTEN`s on the bus channel.
 * The notification carries only the row's sequence (NOTIFY's payload is limited to 8000 bytes; a
 * change can be larger), so the relay reads the rows from the table. When the connection is lost
 * it connects again, and once listening wakes the relay, which reads everything committed meanwhile.
 */
export class PgNotifyWakeup implements RelayWakeup {
  private client: pg.PoolClient | undefined;
  private read: (() => void) | undefined;
  private retry: NodeJS.Timeout | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(private readonly options: PgNotifyWakeupOptions) {}

  /** The server process of the listening connection (as `pg_stat_activity` names it), while connected. */
  get listenerPid(): number | undefined {
    return (this.client as (pg.PoolClient & { processID?: number }) | undefined)?.processID;
  }

  async start(read: () => void): Promise<void> {
    this.read = read;
    this.stopped = false;
    await this.listen();
    this.heartbeat = setInterval(() => void this.check(), this.options.heartbeatMs ?? DEFAULT_HEARTBEAT_MS);
    this.heartbeat.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retry);
    clearInterval(this.heartbeat);
    const client = this.client;
    this.client = undefined;
    // Closed, not returned to the pool: it carries this listener's LISTEN and handlers.
    client?.release(true);
  }

  private async listen(): Promise<void> {
    const client = await this.options.pool.connect();
    const lost = (err?: Error): void => this.lost(client, err);
    client.on("error", lost);
    client.on("end", lost);
    client.on("notification", (n) => {
      if (n.channel === BUS_CHANNEL) this.read?.();
    });
    try {
      await client.query(`LISTEN ${BUS_CHANNEL}`);
    } catch (err) {
      client.release(err instanceof Error ? err : true);
      throw err;
    }
    if (this.stopped) {
      client.release(true);
      return;
    }
    this.client = client;
    // What was committed while nobody listened (before the first LISTEN, or during a cut).
    this.read?.();
  }

  private lost(client: pg.PoolClient, err: Error | undefined): void {
    if (this.client !== client) return;
    this.client = undefined;
    // Released with an error: the pool closes the connection rather than handing it out again.
    client.release(err ?? true);
    this.options.logger.warn({ err }, "bus listener: connection to PostgreSQL lost; listening again");
    this.reconnect();
  }

  private reconnect(): void {
    if (this.stopped) return;
    clearTimeout(this.retry);
    this.retry = setTimeout(() => {
      this.listen().catch((err: unknown) => {
        this.options.logger.warn({ err }, "bus listener: PostgreSQL unreachable; retrying");
        this.reconnect();
      });
    }, this.options.retryMs ?? DEFAULT_RETRY_MS);
    this.retry.unref();
  }

  private async check(): Promise<void> {
    const client = this.client;
    if (!client) return;
    await client.query("SELECT 1").catch((err: unknown) => this.lost(client, err instanceof Error ? err : undefined));
  }
}
