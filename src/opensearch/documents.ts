import { randomUUID } from "node:crypto";
import type { ObservationDocument, StoredObservationInput } from "../observations/index.js";
import type { BulkItem } from "./bulk.js";
import { indexOf, type IndexLayout } from "./indices.js";
import { ID_FIELD } from "./mapping.js";

/**
 * An observation as a `_bulk` item: the document FIND answers in `_source` (the embedded
 * store's: thingName, thingType, domain, timestamp, state, nested), in its thing type's index of
 * its period, under `id`, which the document also carries in `dmsId` for exports to page by
 * (answers leave it out).
 */
export function bulkItem(layout: IndexLayout, id: string, d: ObservationDocument): BulkItem {
  const { thingName, thingType, domain, timestamp, state, nested } = d;
  const source =
    nested === undefined
      ? { thingName, thingType, domain, timestamp, state, [ID_FIELD]: id }
      : { thingName, thingType, domain, timestamp, state, nested, [ID_FIELD]: id };
  return { index: indexOf(layout, thingType, timestamp), id, source: JSON.stringify(source) };
}

/**
 * The id of a stored input: its stream and offset when a stream replays it (a Kafka partition:
 * `kafka:<topic>:<partition>:<offset>`, as the store role names what it reads), so that a replay
 * indexes it under the same id again; a new one otherwise.
 */
export function inputId(input: StoredObservationInput): string {
  return input.from === undefined ? randomUUID() : `${input.from.stream}:${input.from.offset}`;
}
