import type { Migration, PgMigration } from "../store/index.js";

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

/**
 * The same table for `PgBusEventStore`, and the trigger that notifies each new row's sequence on
 * the `dms_bus` channel (delivered at commit, in commit order) for `PgNotifyWakeup`.
 */
export const busPgMigrations: PgMigration[] = [
  {
    id: "bus-001",
    up: `
      CREATE TABLE bus_events (
        seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        origin TEXT NOT NULL,
        name TEXT NOT NULL,
        payload TEXT NOT NULL,
        at TIMESTAMPTZ NOT NULL
      );
      CREATE INDEX bus_events_at ON bus_events (at);
      CREATE FUNCTION bus_events_notify() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('dms_bus', NEW.seq::text);
        RETURN NULL;
      END $$;
      CREATE TRIGGER bus_events_notify AFTER INSERT ON bus_events FOR EACH ROW EXECUTE FUNCTION bus_events_notify();
    `,
  },
];
