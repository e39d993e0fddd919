import { decodeMessages, decodeWireMessages, type Ingested, type WireDecoder } from "./decode.js";
import type { HandledBatch } from "./engine.js";
import type { RawObservation } from "./types.js";

/** A stream source's chunk of raw messages as the engine's decoded inputs. */
export type ChunkDecoder = (chunk: readonly RawObservation[]) => Ingested[] | Promise<Ingested[]>;

/** JSON values, or with a schema registry values in the Confluent wire format (JSON ones still read). */
export function chunkDecoder(wire: WireDecoder | undefined): ChunkDecoder {
  return wire === undefined ? decodeMessages : (chunk) => decodeWireMessages(chunk, wire);
}

/**
 * The step from a stream source to the engine: each chunk the source hands over is decoded and
 * handed to the engine (`handle`) in the order the source handed it over. The source does not wait
 * for one chunk to be handled before it hands the next, and the schema registry's decode is
 * asynchronous: without the chain, a later chunk could reach the engine first.
 */
export function engineFeed(
  decode: ChunkDecoder,
  handle: (batch: readonly Ingested[]) => Promise<HandledBatch>,
): (chunk: readonly RawObservation[]) => Promise<HandledBatch> {
  let decodedInOrder: Promise<unknown> = Promise.resolve();
  return (chunk) => {
    const decoded = decodedInOrder.then(() => decode(chunk));
    decodedInOrder = decoded.catch(() => undefined);
    return decoded.then(handle);
  };
}
