import { randomUUID } from "node:crypto";
import type { ObservationColumnsBuilder, StateText } from "../observations/index.js";
import { readGeoPoint, type LonLat } from "./compile/index.js";
import { MAX_DEAD_LETTER_PAYLOAD, type DeadLetter, type DeadLetterReason } from "./dead-letters/index.js";
import type { Ingested } from "./decode.js";
import type { ThingInfo } from "./things.js";
import type { NestedObservation, SourcePosition } from "./types.js";

/** The first resource whose value does not fit the thing type's declaration. */
export function wrongType(
  state: Record<string, unknown>,
  checks: ReadonlyMap<string, (value: unknown) => boolean>,
  badPosition: boolean,
): string | undefined {
  if (badPosition) return "latlng";
  if (checks.size === 0) return undefined;
  for (const k in state) {
    if (k === "latlng") continue;
    const check = checks.get(k);
    if (check !== undefined && !check(state[k])) return k;
  }
  return undefined;
}

const scratch: LonLat = [0, 0];

/**
 * The resource of a known thing's observation that does not fit its declaration (`latlng` when it
 * is not a geo point), or undefined: what the engine refuses as `wrong-type`, for a reader of the
 * same observations that does not evaluate them (the OpenSearch store role).
 */
export function wrongTypeOf(
  state: Record<string, unknown>,
  checks: ReadonlyMap<string, (value: unknown) => boolean>,
): string | undefined {
  const latlng = state.latlng;
  return wrongType(state, checks, latlng !== undefined && latlng !== null && !readGeoPoint(latlng, scratch));
}

/** `kafka:<topic>:<partition>:<offset>` for Kafka (the same on replay); a generated one otherwise. */
export function observationId(position: SourcePosition): string {
  const { source, partition, offset } = position;
  if (offset === undefined) return `${source}:${randomUUID()}`;
  return partition === undefined ? `${source}:${offset}` : `${source}:${partition}:${offset}`;
}

/** Adds the row the observation store keeps of an accepted observation to the batch's. */
export function storeObservation(
  rows: ObservationColumnsBuilder,
  position: SourcePosition,
  /** The thing's type and domain, and whether its names are plain: its runtime record holds them. */
  info: Pick<ThingInfo, "thingType" | "domain"> & { plainNames: boolean },
  thingName: string,
  timestamp: number,
  state: Record<string, unknown>,
  nested: NestedObservation[] | undefined,
  /** The state's JSON text as the input held it, when it did: stored as it is. */
  text?: StateText,
): void {
  // A position with an offset is replayable (Kafka): the store keeps each (stream, offset) once.
  const { source, partition, offset } = position;
  const replayable = offset !== undefined;
  rows.addObservation(
    thingName,
    info.thingType,
    info.domain,
    timestamp,
    state,
    nested,
    replayable ? rows.streamOf(source, partition) : -1,
    replayable ? Number(offset) : 0,
    text,
    info.plainNames,
  );
}

/** The dead letter of an input: where it came from, why, and its first 4 KiB. */
export function deadLetter(
  item: Ingested,
  reason: DeadLetterReason,
  message: string,
  now: number,
  thingName: string | undefined,
  domain: string | undefined,
): DeadLetter {
  const { source, partition, offset } = item.position;
  return {
    source,
    partition,
    offset,
    thingName,
    domain,
    reason,
    message,
    payload: payloadText(item.input),
    createdAt: now,
  };
}

function payloadText(value: unknown): string | undefined {
  let text: string | undefined;
  if (value instanceof Uint8Array) text = Buffer.from(value.buffer, value.byteOffset, value.length).toString("utf8");
  else {
    try {
      text = JSON.stringify(value);
    } catch {
      return undefined;
    }
  }
  if (text === undefined) return undefined;
  return text.length > MAX_DEAD_LETTER_PAYLOAD ? text.slice(0, MAX_DEAD_LETTER_PAYLOAD) : text;
}
