import type { Migration } from "../store/index.js";

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
