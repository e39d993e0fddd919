import { planFind, runFind } from "../../src/observations/index.js";
import type { Payload } from "../support/http.js";
import { OBSERVATION_BACKENDS, type ObservationBackend, type OpenedBackend } from "./backends.js";

/** A stored observation for a test: `state` holds the fields of the ES case. */
export interface TestObservation {
  timestamp: number | string;
  thingName?: string;
  thingType?: string;
  state?: Record<string, unknown>;
}

export const T0 = Date.parse("2017-01-01T00:00:00Z");

/** A store holding `docs`, searched as FIND does. */
export interface EsIndex {
  /** Runs an ES request as is (it must carry its own timestamp range). */
  raw(request: unknown, thingTypes?: string[], limit?: number): Promise<Payload>;
  /** Runs an ES case: its query (match_all if none) gets the mandatory timestamp filter beside it, which scores nothing. */
  search(request: Record<string, unknown>): Promise<Payload>;
  close(): Promise<void>;
}

/**
 * A store of `backend` holding `docs` (ids 1..n in order), searched as FIND does. Its database
 * is made on the first search, so that the indexes a file declares are not all open at once.
 */
export function esIndex(
  backend: ObservationBackend,
  docs: TestObservation[],
  now = Date.parse("2017-06-01T00:00:00Z"),
): EsIndex {
  let opened: Promise<OpenedBackend> | undefined;
  const open = (): Promise<OpenedBackend> =>
    (opened ??= backend.open().then(async (o) => {
      await o.store.insertBatch(
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
      return o;
    }));
  return {
    async raw(request, thingTypes = ["10", "20"], limit) {
      const { reader } = await open();
      return (await runFind(reader, planFind(request, now), { thingTypes }, limit)) as Payload;
    },
    search(request) {
      const query = request.query ?? { match_all: {} };
      return this.raw({ ...request, query: { bool: { must: query, filter: { range: { timestamp: { gte: 0 } } } } } });
    },
    close: async () => {
      await (await opened)?.close();
    },
  };
}

/** Each backend with its `esIndex`, for `describe.each`. */
export const ES_BACKENDS = OBSERVATION_BACKENDS.map((backend) => ({
  name: backend.name,
  esIndex: (docs: TestObservation[], now?: number) => esIndex(backend, docs, now),
}));
