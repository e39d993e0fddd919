import type { ObservationDocument, StoredObservationInput } from "./types.js";

/**
 * A batch as the writer takes it, column by column: documents already JSON and
 * numbers in typed arrays, so that handing a batch to the writer thread copies
 * strings and bytes, not object graphs (structured clone of objects costs more
 * than the JSON). One row per index below `count`.
 */
export interface ObservationColumns {
  count: number;
  thingName: string[];
  thingType: string[];
  domain: string[];
  ts: Float64Array;
  /** Each row's document as JSON. */
  doc: string[];
  /** The replayable streams of the batch (`kafka:<topic>:<partition>`), each once. */
  streams: string[];
  /** Per row, its stream's index in `streams`, or -1 for a row of no replayable stream. */
  stream: Int32Array;
  /** Its offset in the stream (0 where `stream` is -1). */
  offset: Float64Array;
}

/** Rows a batch starts with room for when the caller does not say. */
const INITIAL_ROWS = 64;

/**
 * Builds a batch's columns row by row: the engine adds each observation it
 * accepts (`addObservation`: one JSON.stringify of its document, no objects
 * kept per row), other writers documents they have as JSON (`addDocument`).
 */
export class ObservationColumnsBuilder {
  private count = 0;
  private readonly thingName: string[] = [];
  private readonly thingType: string[] = [];
  private readonly domain: string[] = [];
  private readonly doc: string[] = [];
  private ts: Float64Array;
  private stream: Int32Array;
  private offset: Float64Array;
  private readonly streams: string[] = [];
  /** The last stream asked for by source and partition: a batch of one Kafka chunk has one. */
  private lastSource: string | undefined;
  private lastPartition: number | undefined;
  private lastStream = -1;

  constructor(capacity = INITIAL_ROWS) {
    const rows = Math.max(1, capacity);
    this.ts = new Float64Array(rows);
    this.stream = new Int32Array(rows);
    this.offset = new Float64Array(rows);
  }

  /**
   * The index of the stream a replayable source read from: `<source>:<partition>`, or the source
   * where it has no partitions. Pass it to `add…` with the row's offset.
   */
  streamOf(source: string, partition: number | undefined): number {
    if (source === this.lastSource && partition === this.lastPartition && this.lastStream >= 0) return this.lastStream;
    const name = partition === undefined ? source : `${source}:${partition}`;
    let index = this.streams.indexOf(name);
    if (index < 0) index = this.streams.push(name) - 1;
    this.lastSource = source;
    this.lastPartition = partition;
    this.lastStream = index;
    return index;
  }

  /**
   * An observation the engine accepted, stored as the document FIND and exports read; `stream`
   * -1 when it is not replayable.
   */
  addObservation(
    thingName: string,
    thingType: string,
    domain: string,
    timestamp: number,
    state: Record<string, unknown>,
    nested: ObservationDocument["nested"],
    stream: number,
    offset: number,
  ): void {
    // One object literal of a fixed shape, dropped at once: a young-generation allocation, not a row kept.
    const json =
      nested === undefined
        ? JSON.stringify({ thingName, thingType, domain, timestamp, state })
        : JSON.stringify({ thingName, thingType, domain, timestamp, state, nested });
    this.addDocument(thingName, thingType, domain, timestamp, json, stream, offset);
  }

  /** A document, with its JSON; `stream` -1 when it is not replayable. */
  addDocument(
    thingName: string,
    thingType: string,
    domain: string,
    timestamp: number,
    json: string,
    stream: number,
    offset: number,
  ): void {
    const i = this.count++;
    if (i === this.ts.length) this.grow();
    this.thingName.push(thingName);
    this.thingType.push(thingType);
    this.domain.push(domain);
    this.doc.push(json);
    this.ts[i] = timestamp;
    this.stream[i] = stream;
    this.offset[i] = offset;
  }

  private grow(): void {
    const rows = this.ts.length * 2;
    const ts = new Float64Array(rows);
    ts.set(this.ts);
    this.ts = ts;
    const stream = new Int32Array(rows);
    stream.set(this.stream);
    this.stream = stream;
    const offset = new Float64Array(rows);
    offset.set(this.offset);
    this.offset = offset;
  }

  /** The batch's columns: the typed arrays cut to its rows, so that the copy to the writer carries no spare room. */
  columns(): ObservationColumns {
    const n = this.count;
    return {
      count: n,
      thingName: this.thingName,
      thingType: this.thingType,
      domain: this.domain,
      ts: this.ts.length === n ? this.ts : this.ts.slice(0, n),
      doc: this.doc,
      streams: this.streams,
      stream: this.stream.length === n ? this.stream : this.stream.slice(0, n),
      offset: this.offset.length === n ? this.offset : this.offset.slice(0, n),
    };
  }
}

/** The columns of stored observations given as documents (HTTP, tools, tests): each document's JSON as it is. */
export function toColumns(inputs: readonly StoredObservationInput[]): ObservationColumns {
  const rows = new ObservationColumnsBuilder(inputs.length);
  for (const { from, document: d } of inputs) {
    const stream = from === undefined ? -1 : rows.streamOf(from.stream, undefined);
    rows.addDocument(d.thingName, d.thingType, d.domain, d.timestamp, JSON.stringify(d), stream, from?.offset ?? 0);
  }
  return rows.columns();
}

/** Row `i` as a stored observation: what tests and tools read back. */
export function storedInput(columns: ObservationColumns, i: number): StoredObservationInput {
  const document = JSON.parse(columns.doc[i]!) as ObservationDocument;
  const s = columns.stream[i]!;
  return s < 0 ? { document } : { from: { stream: columns.streams[s]!, offset: columns.offset[i]! }, document };
}
