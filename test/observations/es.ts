import { migrations } from "../../src/migrations.js";
import { openObservations, planFind, runFind } from "../../src/observations/index.js";
import { openDatabase } from "../../src/store/index.js";
import type { Payload } from "../support/http.js";

/** A stored observation for a test: `state` holds the fields of the ES case. */
export interface TestObservation {
  timestamp: number | string;
  thingName?: string;
  thingType?: string;
  state?: Record<string, unknown>;
}

export const T0 = Date.parse("2017-01-01T00:00:00Z");

/** An in-memory store holding `docs` (ids 1..n in order), searched as FIND does. */
export function esIndex(docs: TestObservation[], now = Date.parse("2017-06-01T00:00:00Z")) {
  const db = openDatabase({ dataDir: ":memory:", migrations });
  const { store, reader } = openObservations({ dataDir: ":memory:", db, writerThread: false });
  // In memory the store writes on this thread, before insertBatch returns.
  void store.insertBatch(
    docs.map((d) => ({
      document: {
        thingName: d.thingName ?? "t1",
        thingType: d.thingType ?? "10",
        domain: "acme",
        timestamp: typeof d.timestamp === "string" ? Date.parse(d.timestamp) : d.timestamp,
        state: d.state ?? {},
      },
    })),
  );
  return {
    /** Runs an ES request as is (it must carry its own timestamp range). */
    raw(request: unknown, thingTypes = ["10", "20"], limit?: number): Payload {
      return runFind(reader, planFind(request, now), { thingTypes }, limit);
    },
    /** Runs an ES case: its query (match_all if none) gets the mandatory timestamp filter beside it, which scores nothing. */
    search(request: Record<string, unknown>): Payload {
      const query = request.query ?? { match_all: {} };
      return this.raw({ ...request, query: { bool: { must: query, filter: { range: { timestamp: { gte: 0 } } } } } });
    },
    close: () => db.close(),
  };
}
