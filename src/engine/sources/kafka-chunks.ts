import type { RawObservation } from "../types.js";

/**
 * A chunk of one partition's messages as posted between the fetch thread and the engine's: the
 * values in one buffer (transferred, not copied), where each ends, and the offsets as numbers, so
 * that the post is a few blocks of bytes rather than thousands of objects to clone.
 */
export interface PackedChunk {
  source: string;
  partition: number;
  epoch: number;
  keys: (string | null)[];
  offsets: Float64Array;
  ends: Uint32Array;
  bytes: ArrayBuffer;
}

/** A chunk's messages, all of one partition and epoch (as the consumer loop hands them over), packed. */
export function packChunk(chunk: readonly RawObservation[]): PackedChunk {
  const first = chunk[0]!.position;
  let size = 0;
  for (const raw of chunk) size += raw.value.length;
  const bytes = new Uint8Array(size);
  const ends = new Uint32Array(chunk.length);
  const offsets = new Float64Array(chunk.length);
  const keys = new Array<string | null>(chunk.length);
  let at = 0;
  for (let i = 0; i < chunk.length; i++) {
    const raw = chunk[i]!;
    bytes.set(raw.value, at);
    at += raw.value.length;
    ends[i] = at;
    offsets[i] = Number(raw.position.offset);
    keys[i] = raw.key ?? null;
  }
  return {
    source: first.source,
    partition: first.partition ?? 0,
    epoch: first.epoch ?? 0,
    keys,
    offsets,
    ends,
    bytes: bytes.buffer,
  };
}

/** The chunk's messages again, each value a view of the one buffer. */
export function unpackChunk(packed: PackedChunk): RawObservation[] {
  const { source, partition, epoch, keys, offsets, ends, bytes } = packed;
  const out = new Array<RawObservation>(offsets.length);
  let start = 0;
  for (let i = 0; i < offsets.length; i++) {
    const end = ends[i]!;
    out[i] = {
      key: keys[i] ?? null,
      value: Buffer.from(bytes, start, end - start),
      position: { source, partition, offset: String(offsets[i]), epoch },
    };
    start = end;
  }
  return out;
}
