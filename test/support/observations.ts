import { SqliteObservationReader, type ObservationDocument } from "../../src/observations/index.js";
import type { TestDms } from "./dms.js";

export interface StoredObservation {
  id: number;
  document: ObservationDocument;
}

/**
 * The stored observations with a timestamp in [from, to], as FIND's reader reads them (the
 * observations have a file and day tables of their own), of every thing type. Synchronous: a
 * test may check in the turn of an acknowledgement that nothing could have stored it after.
 */
export function storedObservations(t: TestDms, from = -Infinity, to = Infinity): StoredObservation[] {
  const thingTypes = t.dms.services
    .db!.prepare<[], { id: string }>("SELECT id FROM thing_types")
    .all()
    .map((r) => r.id);
  if (thingTypes.length === 0) return [];
  const reader = t.dms.services.observationReader;
  if (!(reader instanceof SqliteObservationReader)) throw new Error("the test service reads observations from SQLite");
  return reader
    .candidatesNow({ tsFrom: from, tsTo: to, thingTypes }, 10_000_000)
    .map(([id, , doc]) => ({ id, document: JSON.parse(doc) as ObservationDocument }));
}
