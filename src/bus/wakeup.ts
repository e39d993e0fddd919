/**
 * What tells a `BusRelay` when to read the table of changes: a timer, or the database announcing
 * new rows (`PgNotifyWakeup`). The table stays the log either way; a wakeup only says when to look.
 */
export interface RelayWakeup {
  /** From now on calls `read` whenever other processes' changes may be waiting. */
  start(read: () => void): Promise<void>;
  stop(): Promise<void>;
}

/** Reads every `ms`: for a database with no notifications (SQLite files shared by processes). */
export function pollingWakeup(ms: number): RelayWakeup {
  let timer: NodeJS.Timeout | undefined;
  return {
    async start(read) {
      timer = setInterval(read, ms);
      timer.unref();
    },
    async stop() {
      clearInterval(timer);
      timer = undefined;
    },
  };
}
