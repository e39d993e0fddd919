import type { RawObservation, SourcePosition } from "../types.js";

/*
 * A source's messages and their positions are made by constructors rather than object literals,
 * for the reason `IngestedRecord` is (decode.ts): V8 tracks a literal's allocation site, a chunk's
 * messages live from the fetch to the end of the chunk's evaluation, survive a scavenge, and the
 * site is marked for pretenuring; from then on every message and position went straight to the old
 * generation, and what they point to (the value's bytes, the offset's string) was kept alive across
 * scavenges until promoted. A constructor's objects carry no allocation site. On bench/engine's loop
 * with `RULES=0`: 47 and 35 MB promoted over 400,000 observations against 51 and 53
 * (docs/engine.md, thirteenth pass).
 */

/** Where a message came from: every field present (undefined where the source has none), one shape for all. */
export class StreamPosition implements SourcePosition {
  constructor(
    readonly source: string,
    readonly partition: number | undefined = undefined,
    readonly offset: string | undefined = undefined,
    readonly epoch: number | undefined = undefined,
  ) {}
}

/** A message's key, bytes and position, as a source hands it to the decode. */
export class RawMessage implements RawObservation {
  constructor(
    readonly key: string | null,
    readonly value: Uint8Array,
    readonly position: SourcePosition,
  ) {}
}
