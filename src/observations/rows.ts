import { Dictionary } from "../store/index.js";
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
  /**
   * Per row, its thing type's index in `thingTypes` (and its domain's in `domains`): a batch
   * has few of each, and a code costs the copy to the writer thread less than a string.
   */
  thingType: Int32Array;
  thingTypes: string[];
  domain: Int32Array;
  domains: string[];
  ts: Float64Array;
  /**
   * Every row's document as JSON in UTF-8, back to back: row i's is bytes [docEnd[i - 1], docEnd[i])
   * (from 0 for the first; `documents` reads them). One copy of bytes to the writer thread, where
   * strings would be serialized and made again one by one.
   */
  docs: Uint8Array;
  docEnd: Int32Array;
  /** The replayable streams of the batch (`kafka:<topic>:<partition>`), each once. */
  streams: string[];
  /** Per row, its stream's index in `streams`, or -1 for a row of no replayable stream. */
  stream: Int32Array;
  /** Its offset in the stream (0 where `stream` is -1). */
  offset: Float64Array;
}

/**
 * An observation's state as JSON text, when its input held it as JSON.stringify would write it
 * (the engine's decode finds it): bytes [stateStart, stateEnd) of `stateBytes`, ASCII; stateStart
 * -1 or no bytes when there is none.
 */
export interface StateText {
  stateBytes: Buffer | undefined;
  stateStart: number;
  stateEnd: number;
}

/** Rows a batch starts with room for when the caller does not say. */
const INITIAL_ROWS = 64;
/** Bytes of documents a batch starts with room for, per row (the engine's lean rows are about 90). */
const INITIAL_DOC_BYTES = 128;
/**
 * How a lean document opens: `{"state":…}` (and `,"nested":…`), the document without its
 * thingName, thingType, domain and timestamp, which the row holds in its columns. Whole
 * documents (every row of earlier versions; `addDocument`'s) open with `{"thingName":` or,
 * when their first member is `state`, with a space, so the first characters tell them apart.
 */
const LEAN_HEAD = '{"state":';
/** `LEAN_HEAD` as bytes: what a lean document's bytes open with, before its state's text and `}`. */
const LEAN_HEAD_BYTES = Buffer.from(LEAN_HEAD, "latin1");
const CLOSE = 0x7d;
const SPACE = 0x20;

/** Row `i`'s document, from `docs` viewed as a Buffer (see `documents`). */
function documentAt(docs: Buffer, docEnd: Int32Array, i: number): string {
  return docs.toString("utf8", i === 0 ? 0 : docEnd[i - 1]!, docEnd[i]!);
}

/** Reads the batch's documents by row: one Buffer view of `docs` for all of them. */
export function documents(columns: ObservationColumns): (i: number) => string {
  const { docs, docEnd } = columns;
  const view = Buffer.from(docs.buffer, docs.byteOffset, docs.length);
  return (i) => documentAt(view, docEnd, i);
}

/**
 * Builds a batch's columns row by row: the engine adds each observation it
 * accepts (`addObservation`: the input's own state text where the decode found
 * it, else one JSON.stringify of its document; no objects kept per row), other
 * writers documents they have as JSON (`addDocument`).
 */
export class ObservationColumnsBuilder {
  private count = 0;
  private readonly thingName: string[] = [];
  private readonly thingTypes = new Dictionary();
  private readonly domains = new Dictionary();
  /** The documents' bytes so far, `docsLength` of them (`columns` hands over a copy of just those). */
  private docs: Buffer;
  private docsLength = 0;
  private docEnd: Int32Array;
  private thingType: Int32Array;
  private domain: Int32Array;
  /** The last domain coded: a batch's rows are mostly of one. */
  private lastDomain: string | undefined;
  private lastDomainCode = -1;
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
    this.docs = Buffer.allocUnsafeSlow(rows * INITIAL_DOC_BYTES);
    this.docEnd = new Int32Array(rows);
    this.thingType = new Int32Array(rows);
    this.domain = new Int32Array(rows);
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
    /** The state's text as the input held it, when it did: the same text JSON.stringify would make, read, not made. */
    text?: StateText,
    /** `plainNames` of the three names, when the caller keeps it (the engine, per thing): not tested again per row. */
    namesPlain?: boolean,
  ): void {
    const lean = leanable(thingName, thingType, domain, timestamp, namesPlain);
    const bytes = text?.stateBytes;
    if (lean && nested === undefined && bytes !== undefined && text!.stateStart >= 0) {
      // The input's own text: copied, not made.
      const i = this.addRow(thingName, thingType, domain, timestamp, stream, offset);
      const start = text!.stateStart;
      const end = text!.stateEnd;
      const docs = this.room(LEAN_HEAD_BYTES.length + end - start + 1);
      let at = this.docsLength;
      for (let j = 0; j < LEAN_HEAD_BYTES.length; j++) docs[at++] = LEAN_HEAD_BYTES[j]!;
      for (let j = start; j < end; j++) docs[at++] = bytes[j]!;
      docs[at++] = CLOSE;
      this.docsLength = at;
      this.docEnd[i] = at;
      return;
    }
    // One object literal of a fixed shape, dropped at once: a young-generation allocation, not a row kept.
    const json = lean
      ? nested === undefined
        ? JSON.stringify({ state })
        : JSON.stringify({ state, nested })
      : nested === undefined
        ? JSON.stringify({ thingName, thingType, domain, timestamp, state })
        : JSON.stringify({ thingName, thingType, domain, timestamp, state, nested });
    this.addDocument(thingName, thingType, domain, timestamp, json, stream, offset, lean);
  }

  /**
   * A document, with its JSON; `stream` -1 when it is not replayable. `lean` only for the lean
   * JSON `addObservation` makes: a whole document that happens to open as a lean one would be
   * read as lean, and is marked by a space.
   */
  addDocument(
    thingName: string,
    thingType: string,
    domain: string,
    timestamp: number,
    json: string,
    stream: number,
    offset: number,
    lean = false,
  ): void {
    const i = this.addRow(thingName, thingType, domain, timestamp, stream, offset);
    const marked = !lean && json.startsWith(LEAN_HEAD);
    // UTF-8 takes at most 3 bytes per UTF-16 unit.
    const docs = this.room(json.length * 3 + 1);
    if (marked) docs[this.docsLength++] = SPACE;
    this.docsLength += docs.write(json, this.docsLength, "utf8");
    this.docEnd[i] = this.docsLength;
  }

  /** A row's columns but its document, which the caller writes next; returns its index. */
  private addRow(
    thingName: string,
    thingType: string,
    domain: string,
    timestamp: number,
    stream: number,
    offset: number,
  ): number {
    const i = this.count++;
    if (i === this.ts.length) this.grow();
    this.thingName.push(thingName);
    this.thingType[i] = this.thingTypes.code(thingType);
    if (domain !== this.lastDomain) {
      this.lastDomain = domain;
      this.lastDomainCode = this.domains.code(domain);
    }
    this.domain[i] = this.lastDomainCode;
    this.ts[i] = timestamp;
    this.stream[i] = stream;
    this.offset[i] = offset;
    return i;
  }

  /** The documents' buffer, with room for `bytes` more. */
  private room(bytes: number): Buffer {
    const need = this.docsLength + bytes;
    if (need > this.docs.length) {
      const docs = Buffer.allocUnsafeSlow(Math.max(need, this.docs.length * 2));
      this.docs.copy(docs, 0, 0, this.docsLength);
      this.docs = docs;
    }
    return this.docs;
  }

  private grow(): void {
    const rows = this.ts.length * 2;
    this.docEnd = grown(this.docEnd, new Int32Array(rows));
    this.thingType = grown(this.thingType, new Int32Array(rows));
    this.domain = grown(this.domain, new Int32Array(rows));
    this.ts = grown(this.ts, new Float64Array(rows));
    this.stream = grown(this.stream, new Int32Array(rows));
    this.offset = grown(this.offset, new Float64Array(rows));
  }

  /** The batch's columns: the typed arrays cut to its rows, so that the copy to the writer carries no spare room. */
  columns(): ObservationColumns {
    const n = this.count;
    return {
      count: n,
      thingName: this.thingName,
      thingType: this.thingType.length === n ? this.thingType : this.thingType.slice(0, n),
      thingTypes: this.thingTypes.values,
      domain: this.domain.length === n ? this.domain : this.domain.slice(0, n),
      domains: this.domains.values,
      ts: this.ts.length === n ? this.ts : this.ts.slice(0, n),
      // A copy of the bytes used: a view would carry the whole buffer to the writer thread.
      docs: new Uint8Array(this.docs.buffer, this.docs.byteOffset, this.docsLength).slice(),
      docEnd: this.docEnd.length === n ? this.docEnd : this.docEnd.slice(0, n),
      streams: this.streams,
      stream: this.stream.length === n ? this.stream : this.stream.slice(0, n),
      offset: this.offset.length === n ? this.offset : this.offset.slice(0, n),
    };
  }
}

/** `into`, a larger array, holding `from` at its start. */
function grown<T extends Int32Array | Float64Array>(from: T, into: T): T {
  into.set(from);
  return into;
}

/** The columns of stored observations given as documents (HTTP, tools, tests): each document's JSON as it is. */
export function toColumns(inputs: readonly StoredObservationInput[]): ObservationColumns {
  const rows = new ObservationColumnsBuilder(inputs.length);
  for (const { from, document: d } of inputs) {
    const stream = from === undefined ? -1 : rows.streamOf(from.stream, undefined);
    const whole = JSON.stringify(d);
    const { thingName, thingType, domain, timestamp, state, nested } = d;
    // Lean where that reads back as this document's text (its members in the engine's order, no others).
    const lean = leanable(thingName, thingType, domain, timestamp)
      ? JSON.stringify(nested === undefined ? { state } : { state, nested })
      : undefined;
    const offset = from?.offset ?? 0;
    if (lean !== undefined && documentJson(thingName, thingType, domain, timestamp, lean) === whole) {
      rows.addDocument(thingName, thingType, domain, timestamp, lean, stream, offset, true);
    } else rows.addDocument(thingName, thingType, domain, timestamp, whole, stream, offset);
  }
  return rows.columns();
}

/** Row `i` as a stored observation: what tests and tools read back. */
export function storedInput(columns: ObservationColumns, i: number): StoredObservationInput {
  const json = documentJson(
    columns.thingName[i]!,
    columns.thingTypes[columns.thingType[i]!]!,
    columns.domains[columns.domain[i]!]!,
    columns.ts[i]!,
    documents(columns)(i),
  );
  const document = JSON.parse(json) as ObservationDocument;
  const s = columns.stream[i]!;
  return s < 0 ? { document } : { from: { stream: columns.streams[s]!, offset: columns.offset[i]! }, document };
}

/** Characters JSON.stringify escapes (and lone surrogates, which SQLite's text cannot hold): a name with one is not put back by plain concatenation. */
// eslint-disable-next-line no-control-regex -- the control characters are what it looks for.
const ESCAPED = /["\\\u0000-\u001f\ud800-\udfff]/;

/**
 * Whether a lean document (the whole one without the four members its row's columns hold) reads
 * back as the whole one's text: `DOCUMENT_SQL` puts names back between quotes as they are, which is
 * JSON.stringify's text when it escapes nothing in them, and the `ts` column's text, which is
 * JSON.stringify's for an integer. Half the bytes to serialize, post to the writer and store.
 */
function leanable(
  thingName: string,
  thingType: string,
  domain: string,
  timestamp: number,
  /** `plainNames` of the three, when the caller already knows it. */
  namesPlain?: boolean,
): boolean {
  return Number.isSafeInteger(timestamp) && (namesPlain ?? plainNames(thingName, thingType, domain));
}

/** Whether JSON.stringify writes each name as it is, between quotes (see `leanable`). */
export function plainNames(thingName: string, thingType: string, domain: string): boolean {
  return !ESCAPED.test(thingName) && !ESCAPED.test(thingType) && !ESCAPED.test(domain);
}

/**
 * The stored document's whole JSON from a row's columns, in SQL: what every read of a day's
 * table selects in place of `doc`, so readers get the text a whole document had (the members'
 * order is JSON.stringify's of the engine's documents). Mirrors `documentJson`.
 */
export const DOCUMENT_SQL = `CASE WHEN substr(doc, 1, 9) = '${LEAN_HEAD}' THEN '{"thingName":"' || thing_name || '","thingType":"' || thing_type || '","domain":"' || domain || '","timestamp":' || ts || ',' || substr(doc, 2) WHEN substr(doc, 1, 1) = ' ' THEN substr(doc, 2) ELSE doc END`;

/** The stored document's whole JSON from a row's fields, as `DOCUMENT_SQL` makes it. */
export function documentJson(thingName: string, thingType: string, domain: string, ts: number, doc: string): string {
  if (doc.startsWith(LEAN_HEAD)) {
    return `{"thingName":"${thingName}","thingType":"${thingType}","domain":"${domain}","timestamp":${ts},${doc.slice(1)}`;
  }
  return doc.startsWith(" ") ? doc.slice(1) : doc;
}
