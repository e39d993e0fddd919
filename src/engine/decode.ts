import type { DeadLetterReason } from "./dead-letters/index.js";
import { scanObservation, type StateSpan } from "./fast-decode.js";
import type { NestedObservation, RawObservation, SourcePosition } from "./types.js";

/**
 * An observation after the one decode every way in goes through (Kafka, `POST /observations`, the
 * MQTT bridge, SET_RESOURCE): what sources authorize and what the engine evaluates. Nothing
 * downstream reads the input it came from again, so what was authorized is what is evaluated.
 * It may be the input object itself, when that already reads as one (see `decodeValue`): then it
 * has no `nested` member, and any other members the input had, which nothing reads.
 */
export interface DecodedObservation {
  thingName: string;
  /** Epoch milliseconds. */
  timestamp: number;
  state: Record<string, unknown>;
  nested: NestedObservation[] | undefined;
}

/** Why an input is not an observation: its dead letter's reason, and the thing it names when it names one. */
export interface Refusal {
  reason: DeadLetterReason;
  message: string;
  /** The thing the input names (whose domain may read the dead letter, and which a source authorizes). */
  thingName: string | undefined;
}

interface IngestedBase {
  position: SourcePosition;
  /** The input as it arrived (bytes or a JSON value), for a dead letter's payload only. */
  input: unknown;
  /**
   * The observation's state as JSON text, when the decode found it in the input as JSON.stringify
   * would write it: bytes [stateStart, stateEnd) of `stateBytes` (see `StateSpan`). The store keeps
   * that text rather than stringifying the state again. Absent (or stateStart -1) otherwise.
   */
  stateBytes?: Buffer | undefined;
  stateStart?: number;
  stateEnd?: number;
}

/** One input after decoding: exactly one of an observation and a refusal. */
export type Ingested =
  | (IngestedBase & { observation: DecodedObservation; refusal?: undefined })
  | (IngestedBase & { observation?: undefined; refusal: Refusal });

export interface DecodeOptions {
  /** The Kafka message key: the thing when the value names none. */
  key?: string | null | undefined;
  /**
   * The device that sent it (MQTT `things/{thingName}/observations`): a device speaks only for
   * itself, so an input naming no thing is the device's and one naming another thing is refused.
   */
  device?: string | undefined;
}

/**
 * Decodes one JSON value (already parsed: an item of a `POST /observations` body, of a device's
 * array, or a schema-registry record). Only an object is an observation: a string is a string,
 * never text to parse again.
 */
export function decodeValue(value: unknown, position: SourcePosition, options: DecodeOptions = {}): Ingested {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return refuse(value, position, "invalid-observation", "an observation is a JSON object", options.device);
  }
  const o = value as { thingName?: unknown; timestamp?: unknown; state?: unknown; nested?: unknown };
  const named = typeof o.thingName === "string" && o.thingName !== "" ? o.thingName : undefined;
  let thingName: string | undefined;
  if (options.device !== undefined) {
    if (o.thingName !== undefined && named !== options.device) {
      const what = named ?? JSON.stringify(o.thingName);
      return refuse(
        value,
        position,
        "foreign-thing",
        `device ${options.device} publishes observations for itself only, not for ${what}`,
        options.device,
      );
    }
    thingName = options.device;
  } else {
    thingName = named ?? (options.key || undefined);
  }
  if (thingName === undefined) {
    return refuse(value, position, "missing-thing-name", "thingName is required", undefined);
  }
  const timestamp = readTimestamp(o.timestamp);
  if (timestamp < 0) {
    const missing = o.timestamp === undefined || o.timestamp === null;
    return refuse(
      value,
      position,
      missing ? "missing-timestamp" : "bad-timestamp",
      "timestamp is epoch milliseconds or ISO 8601",
      thingName,
    );
  }
  const state = o.state === undefined ? {} : o.state;
  if (state === null || typeof state !== "object" || Array.isArray(state)) {
    return refuse(value, position, "invalid-observation", "state is an object", thingName);
  }
  // JSON.parse makes "__proto__" an own key; merged into the thing's state it would replace that object's prototype.
  if (Object.hasOwn(state, "__proto__")) {
    return refuse(value, position, "invalid-observation", "__proto__ is not a resource", thingName);
  }
  const nested = o.nested;
  if (nested !== undefined && !validNested(nested)) {
    return refuse(value, position, "invalid-observation", "nested is an array of {type?, id?, state}", thingName);
  }
  // An input that already reads as its observation (the thing it names, a timestamp in epoch
  // milliseconds, its own state, no nested) is the observation: no second object per observation,
  // which lives as long as its batch and is promoted by the scavenges it outlives. Not a device's:
  // the MQTT bridge forwards its observations as JSON, which must not carry the input's other members.
  if (
    options.device === undefined &&
    named === thingName &&
    o.timestamp === timestamp &&
    o.state === state &&
    nested === undefined
  ) {
    return ingested(position, value, value as DecodedObservation, undefined);
  }
  const observation: DecodedObservation = {
    thingName,
    timestamp,
    state: state as Record<string, unknown>,
    nested: nested as NestedObservation[] | undefined,
  };
  return ingested(position, value, observation, undefined);
}

/**
 * Decodes JSON bytes (a Kafka value, an MQTT payload holding one observation): the common shape
 * read from the bytes (`scanObservation`), anything else through JSON.parse, to the same result.
 */
export function decodeBytes(bytes: Uint8Array, position: SourcePosition, options: DecodeOptions = {}): Ingested {
  return decodeScanned(parseBytes(bytes, true, span), bytes, position, options);
}

/** `decodeParsed` of what the fast scan gave (`span` filled by it), with the state's text where it found it. */
function decodeScanned(value: unknown, bytes: Uint8Array, position: SourcePosition, options: DecodeOptions): Ingested {
  const item = decodeParsed(value, bytes, position, options);
  // The span is the state's that the observation holds: the decode takes the input's own `state`.
  if (span.start >= 0 && item.observation !== undefined) withStateText(item, bytes, span);
  return item;
}

/** Where the last fast scan found its state's text: the decode is synchronous, so one serves all. */
const span: StateSpan = { start: -1, end: -1 };

function withStateText(item: Ingested, bytes: Uint8Array, at: StateSpan): void {
  const record = item as IngestedRecord;
  record.stateBytes = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
  record.stateStart = at.start;
  record.stateEnd = at.end;
}

/** `decodeBytes` by JSON.parse alone: what the fast path declines to, and the reference tests hold it to. */
export function decodeBytesByJsonParse(
  bytes: Uint8Array,
  position: SourcePosition,
  options: DecodeOptions = {},
): Ingested {
  return decodeParsed(parseBytes(bytes, false), bytes, position, options);
}

/** What `parseBytes` returns for bytes that are not JSON (no JSON value is this symbol). */
const NOT_JSON: unique symbol = Symbol("not JSON");

/**
 * The JSON value the bytes hold, or NOT_JSON: the fast path's (`fast`, when it reads them; it reads
 * only objects), else JSON.parse's, to the same value. `at`, when given, says where the fast path
 * found the state's text (start -1 when it did not, or did not read the bytes).
 */
function parseBytes(bytes: Uint8Array, fast: boolean, at?: StateSpan): unknown {
  if (at !== undefined) at.start = -1;
  if (fast) {
    const value = scanObservation(bytes, at);
    if (value !== undefined) return value;
  }
  try {
    return JSON.parse(utf8(bytes));
  } catch {
    return NOT_JSON;
  }
}

/** One observation's parsed bytes, decoded; bytes that were not JSON are refused. */
function decodeParsed(value: unknown, bytes: Uint8Array, position: SourcePosition, options: DecodeOptions): Ingested {
  if (value === NOT_JSON) return refuse(bytes, position, "not-json", "the message is not JSON", options.device);
  return decodeValue(value, position, options);
}

/** A source's batch of messages (JSON values), in order. */
export function decodeMessages(batch: readonly RawObservation[]): Ingested[] {
  const out = new Array<Ingested>(batch.length);
  // One options record for the batch: the decode does not keep it.
  const options: DecodeOptions = { key: undefined };
  for (let i = 0; i < batch.length; i++) {
    const raw = batch[i]!;
    options.key = raw.key;
    out[i] = decodeBytes(raw.value, raw.position, options);
  }
  return out;
}

/** Decodes a message in the Confluent wire format (magic byte 0, schema id) through the schema registry. */
export type WireDecoder = (value: Buffer) => Promise<unknown>;

/** As `decodeMessages`, values in the Confluent wire format going through the schema registry. */
export async function decodeWireMessages(batch: readonly RawObservation[], wire: WireDecoder): Promise<Ingested[]> {
  return Promise.all(
    batch.map(async (raw) => {
      const v = raw.value;
      if (v.length < 5 || v[0] !== 0) return decodeBytes(v, raw.position, { key: raw.key });
      let record: unknown;
      try {
        record = await wire(Buffer.from(v.buffer, v.byteOffset, v.length));
      } catch (err) {
        return refuse(v, raw.position, "undecodable", `schema registry: ${(err as Error).message}`, undefined);
      }
      // Plain JSON data from here on: Avro records are class instances, and the engine reads own keys only.
      return decodeValue(JSON.parse(JSON.stringify(record)) as unknown, raw.position, { key: raw.key });
    }),
  );
}

/**
 * A device's MQTT payload: one observation or an array of them, parsed once. Bytes that are not
 * JSON are one refusal; in an array, each item is decoded (and refused) on its own.
 */
export function decodeDevicePayload(device: string, payload: Uint8Array, position: SourcePosition): Ingested[] {
  const value = parseBytes(payload, true, span);
  if (!Array.isArray(value)) return [decodeScanned(value, payload, position, { device })];
  return value.map((item: unknown) => decodeValue(item, position, { device }));
}

function refuse(
  input: unknown,
  position: SourcePosition,
  reason: DeadLetterReason,
  message: string,
  thingName: string | undefined,
): Ingested {
  return ingested(position, input, undefined, { reason, message, thingName });
}

/**
 * The record of one decoded input, made by a constructor rather than an object literal, so that V8
 * does not pretenure a long-lived literal's allocation site and promote every batch's parsed objects.
 */
class IngestedRecord {
  stateBytes: Buffer | undefined = undefined;
  stateStart = -1;
  stateEnd = -1;
  constructor(
    readonly position: SourcePosition,
    readonly input: unknown,
    readonly observation: DecodedObservation | undefined,
    readonly refusal: Refusal | undefined,
  ) {}
}

function ingested(
  position: SourcePosition,
  input: unknown,
  observation: DecodedObservation | undefined,
  refusal: Refusal | undefined,
): Ingested {
  return new IngestedRecord(position, input, observation, refusal) as Ingested;
}

/** Epoch milliseconds, or -1 when absent or unreadable. */
function readTimestamp(value: unknown): number {
  if (typeof value === "number") return Number.isFinite(value) && value >= 0 ? value : -1;
  if (typeof value === "string" && value !== "") {
    // ISO 8601 with a date part; a bare number in a string is accepted as epoch ms.
    if (/^\d+$/.test(value)) return Number(value);
    const t = Date.parse(value);
    return Number.isNaN(t) || !/^\d{4}-\d{2}-\d{2}/.test(value) ? -1 : t;
  }
  return -1;
}

function validNested(value: unknown): boolean {
  if (!Array.isArray(value)) return false;
  for (const n of value as unknown[]) {
    if (n === null || typeof n !== "object" || Array.isArray(n)) return false;
    const { type, id, state } = n as { type?: unknown; id?: unknown; state?: unknown };
    if (type !== undefined && typeof type !== "string") return false;
    if (id !== undefined && typeof id !== "string") return false;
    if (state === null || typeof state !== "object" || Array.isArray(state)) return false;
    if (Object.hasOwn(state, "__proto__")) return false;
  }
  return true;
}

function utf8(v: Uint8Array): string {
  return Buffer.isBuffer(v) ? v.toString("utf8") : Buffer.from(v.buffer, v.byteOffset, v.length).toString("utf8");
}
