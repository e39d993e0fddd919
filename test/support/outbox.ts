import { pino } from "pino";
import { Outbox, SqliteOutboxStore, realTimers, type OutboxStore } from "../../src/actions/index.js";
import { loadConfig } from "../../src/config/index.js";
import { SqliteEventStore, noPublisher } from "../../src/events/index.js";
import type { ObservationIngest } from "../../src/engine/index.js";
import { createMailer } from "../../src/mail/index.js";
import type { Db } from "../../src/store/index.js";

/**
 * An outbox on `db` outside a running dms, not yet started: real timers, silent logs, the config of `env`
 * (not process.env), a mailer with no SMTP server, SET_RESOURCE into `ingest` (none: no engine) and no event publisher.
 * Its deliveries are kept in `db` unless another `store` is given.
 */
export function standaloneOutbox(
  db: Db,
  options: {
    env?: Record<string, string>;
    concurrency?: number;
    ingest?: ObservationIngest;
    store?: OutboxStore;
    owner?: string;
    leaseMs?: number;
  } = {},
): Outbox {
  const logger = pino({ level: "silent" });
  return new Outbox({
    store: options.store ?? new SqliteOutboxStore(db),
    logger,
    timers: realTimers,
    concurrency: options.concurrency,
    owner: options.owner,
    leaseMs: options.leaseMs,
    deps: {
      config: loadConfig(options.env ?? {}),
      logger,
      mailer: createMailer(undefined, "x@y", logger),
      ingest: () => options.ingest,
      events: new SqliteEventStore(db, Date.now),
      publisher: noPublisher,
      timers: realTimers,
    },
  });
}
