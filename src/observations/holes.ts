import type { ObservationColumns } from "./rows.js";

/**
 * Per stream, the first offset of a batch that failed to store. A later batch of the stream
 * that starts past it would move the mark over the failed rows, and the replay that brings
 * them back would skip them: refused until the stream is handed over again from the hole.
 */
export class StreamHoles {
  private readonly holes = new Map<string, number>();

  /** Throws when the batch starts past a stream's hole; a batch from the hole closes it. */
  check(rows: ObservationColumns): void {
    if (this.holes.size === 0) return;
    for (const [stream, offset] of firstOffsets(rows)) {
      const hole = this.holes.get(stream);
      if (hole === undefined) continue;
      if (offset > hole) {
        throw new Error(`observations of ${stream} from offset ${hole} failed to store: hand them over again first`);
      }
      this.holes.delete(stream);
    }
  }

  /** Notes the batch's streams as failed from its first offsets. */
  record(rows: ObservationColumns): void {
    for (const [stream, offset] of firstOffsets(rows)) {
      if (!this.holes.has(stream)) this.holes.set(stream, offset);
    }
  }
}

/** The first offset of each stream in the batch. */
function firstOffsets(rows: ObservationColumns): Map<string, number> {
  const first = new Map<string, number>();
  for (let i = 0; i < rows.count; i++) {
    const s = rows.stream[i]!;
    if (s < 0) continue;
    const stream = rows.streams[s]!;
    if (!first.has(stream)) first.set(stream, rows.offset[i]!);
  }
  return first;
}
