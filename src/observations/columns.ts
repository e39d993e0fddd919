import { Dictionary } from "../store/index.js";

/**
 * The column cache of a closed day: its rows' documents taken apart once into
 * one column per leaf path (`state.temp`, `thingName`, ...), so that a query
 * reading a few fields of many rows neither reads their JSON text from SQLite
 * nor parses it again. A reader builds a day's columns the first time a query
 * can use them and keeps them while the day is unchanged (`SqliteObservationReader`).
 *
 * A row is answered as its document cut down to the paths a query reads, and
 * that cut-down document must give every such path the values the whole one
 * gives it. So a path is answered from columns only where the documents make that
 * exact: its values are scalars (null counts as absent: every reader drops it),
 * never an object (`exists` on an object looks at everything under it), and no
 * array lies on the way (arrays of objects flatten several values into one path).
 * Anything else is read from the rows.
 */

const EMPTY_OBJECT = {};

/** Values of one leaf path, one per row (in the day's row order). */
export type LeafColumn =
  /** Numbers; NaN where the row has none (JSON has no NaN). */
  | { kind: "number"; values: Float64Array }
  /** Strings by their index in `dictionary`; -1 where the row has none. */
  | { kind: "keyword"; codes: Int32Array; dictionary: string[] }
  /** Booleans or a mix of kinds, as parsed; undefined where the row has none. */
  | { kind: "mixed"; values: unknown[] };

/** A row of the day's table, before its document is taken apart. */
export type StoredRow = [id: number, ts: number, thingType: string, thingName: string, doc: string];

/** A path's columns to set on each projected document: its keys and its values. */
type Projection = { keys: string[]; column: LeafColumn }[];

/** What a day's columns are made of: kept in memory by a reader, stored by the writer (`toStored`). */
interface ColumnParts {
  ts: Float64Array;
  id: Float64Array;
  thingType: Int32Array;
  thingTypes: string[];
  thingName: Int32Array;
  thingNames: string[];
  leaves: Map<string, LeafColumn>;
  objects: Set<string>;
  unanswerable: Set<string>;
}

/** A day's columns as stored: a JSON layout and the typed arrays end to end. */
export interface StoredColumns {
  layout: string;
  data: Buffer;
}

export class DayColumns {
  /** Rows in ascending `ts`: a time window is a slice found by binary search. */
  readonly ts: Float64Array;
  readonly id: Float64Array;
  readonly thingType: Int32Array;
  readonly thingTypes: string[];
  readonly thingName: Int32Array;
  readonly thingNames: string[];
  private readonly leaves: Map<string, LeafColumn>;
  /** Paths that hold an object in some row. */
  private readonly objects: Set<string>;
  /** Paths no projection answers: an array, an empty object, a key with a dot or `__proto__`. */
  private readonly unanswerable: Set<string>;
  /** Bytes held, for the cache's bound. */
  readonly bytes: number;
  /** Rows by thing name and by thing type (`rowsOf`), each built when a query first reads a part of the day by it. */
  private readonly grouped: { thingName?: GroupedRows; thingType?: GroupedRows } = {};

  private constructor(parts: ColumnParts) {
    this.ts = parts.ts;
    this.id = parts.id;
    this.thingType = parts.thingType;
    this.thingTypes = parts.thingTypes;
    this.thingName = parts.thingName;
    this.thingNames = parts.thingNames;
    this.leaves = parts.leaves;
    this.objects = parts.objects;
    this.unanswerable = parts.unanswerable;
    // ts, id, thing type and name codes, and the rows by thing name and type once built.
    let bytes = this.ts.length * (8 + 8 + 4 + 4 + 4 + 4);
    for (const column of this.leaves.values())
      bytes +=
        column.kind === "number"
          ? column.values.byteLength
          : column.kind === "keyword"
            ? column.codes.byteLength
            : column.values.length * 16;
    this.bytes = bytes;
  }

  /** Takes apart `rows`, which must be in ascending `ts`; `tick` is called as it goes (the query's time budget). */
  static build(rows: Iterable<StoredRow>, count: number, tick: () => void): DayColumns {
    const parts: ColumnParts = {
      ts: new Float64Array(count),
      id: new Float64Array(count),
      thingType: new Int32Array(count),
      thingTypes: [],
      thingName: new Int32Array(count),
      thingNames: [],
      leaves: new Map(),
      objects: new Set(),
      unanswerable: new Set(),
    };
    const types = new Dictionary();
    const names = new Dictionary();
    const raw = new Map<string, unknown[]>();
    let n = 0;
    for (const [id, ts, thingType, thingName, doc] of rows) {
      if (n === count) throw new Error("the day's rows changed while its columns were built");
      if ((n & 1023) === 0) tick();
      parts.ts[n] = ts;
      parts.id[n] = id;
      parts.thingType[n] = types.code(thingType);
      parts.thingName[n] = names.code(thingName);
      takeApart(JSON.parse(doc) as Record<string, unknown>, "", n, raw, count, parts);
      n++;
    }
    if (n !== count) throw new Error("the day's rows changed while its columns were built");
    parts.thingTypes = types.values;
    parts.thingNames = names.values;
    for (const [path, values] of raw) parts.leaves.set(path, toColumn(values));
    return new DayColumns(parts);
  }

  /** The columns as the writer stores them beside the day. */
  toStored(): StoredColumns {
    const buffers: ArrayBufferView[] = [this.ts, this.id, this.thingType, this.thingName];
    const leaves: [path: string, kind: LeafColumn["kind"], extra: string[] | unknown[] | null][] = [];
    for (const [path, column] of this.leaves) {
      if (column.kind === "number") buffers.push(column.values);
      else if (column.kind === "keyword") buffers.push(column.codes);
      leaves.push([
        path,
        column.kind,
        column.kind === "keyword" ? column.dictionary : column.kind === "mixed" ? column.values : null,
      ]);
    }
    const layout = JSON.stringify({
      rows: this.ts.length,
      thingTypes: this.thingTypes,
      thingNames: this.thingNames,
      objects: [...this.objects],
      unanswerable: [...this.unanswerable],
      // A row without a mixed value is a hole: written as null, read back as absent.
      leaves: leaves.map(([p, k, extra]) => [
        p,
        k,
        k === "mixed" ? Array.from(extra as unknown[], (v) => v ?? null) : extra,
      ]),
    });
    return { layout, data: Buffer.concat(buffers.map((b) => new Uint8Array(b.buffer, b.byteOffset, b.byteLength))) };
  }

  /** Columns the writer stored: the typed arrays are copied out of the blob (aligned, and the blob's buffer freed). */
  static fromStored({ layout, data }: StoredColumns): DayColumns {
    const l = JSON.parse(layout) as {
      rows: number;
      thingTypes: string[];
      thingNames: string[];
      objects: string[];
      unanswerable: string[];
      leaves: [string, LeafColumn["kind"], unknown[] | null][];
    };
    let at = 0;
    const take = (bytes: number): ArrayBuffer => {
      const copy = new Uint8Array(bytes);
      copy.set(data.subarray(at, at + bytes));
      at += bytes;
      return copy.buffer;
    };
    const n = l.rows;
    const parts: ColumnParts = {
      ts: new Float64Array(take(n * 8)),
      id: new Float64Array(take(n * 8)),
      thingType: new Int32Array(take(n * 4)),
      thingTypes: l.thingTypes,
      thingName: new Int32Array(take(n * 4)),
      thingNames: l.thingNames,
      leaves: new Map(),
      objects: new Set(l.objects),
      unanswerable: new Set(l.unanswerable),
    };
    for (const [path, kind, extra] of l.leaves) {
      if (kind === "number") parts.leaves.set(path, { kind, values: new Float64Array(take(n * 8)) });
      else if (kind === "keyword")
        parts.leaves.set(path, { kind, codes: new Int32Array(take(n * 4)), dictionary: extra as string[] });
      else parts.leaves.set(path, { kind, values: (extra as unknown[]).map((v) => (v === null ? undefined : v)) });
    }
    if (at !== data.length) throw new Error("stored columns do not match their layout");
    return new DayColumns(parts);
  }

  get rows(): number {
    return this.ts.length;
  }

  /**
   * How to cut a row's document down to `paths`, or undefined when some path
   * cannot be answered exactly from the columns (then the rows are read).
   */
  projection(paths: ReadonlySet<string>): Projection | undefined {
    const out: Projection = [];
    for (const path of paths) {
      if (this.objects.has(path) || this.unanswerable.has(path)) return undefined;
      // A key every object inherits (`constructor`) reads a value from an object the projection may leave out.
      if (path.split(".").some((k) => k in EMPTY_OBJECT)) return undefined;
      // An array or an unanswerable key above the path: its values there come from the whole document.
      for (let dot = path.indexOf("."); dot !== -1; dot = path.indexOf(".", dot + 1))
        if (this.unanswerable.has(path.slice(0, dot))) return undefined;
      const column = this.leaves.get(path);
      // A path no row holds a value at is absent from every projected document, as it is from the rows.
      if (column) out.push({ keys: path.split("."), column });
    }
    return out;
  }

  /** The column of a leaf path, undefined where no row holds a value there; answer it only where `projection` allows. */
  leaf(path: string): LeafColumn | undefined {
    return this.leaves.get(path);
  }

  /** The first row at or after `ts` (`atToo`), or after it: a window's bounds, by binary search. */
  firstRow(ts: number, atToo: boolean): number {
    let lo = 0;
    let hi = this.ts.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const t = this.ts[mid]!;
      if (t < ts || (!atToo && t === ts)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /**
   * The rows from `from` to `end` (excluded) whose thing name (or type) is one of `values`,
   * ascending: the day's rows grouped by it once (a counting sort), so that a query of a
   * few things, or of one thing type of several, reads their rows only.
   */
  rowsOf(by: "thingName" | "thingType", values: readonly string[], from: number, end: number): Int32Array {
    const dictionary = by === "thingName" ? this.thingNames : this.thingTypes;
    const byThing = (this.grouped[by] ??= groupRows(this[by], dictionary.length));
    const codes = new Map(dictionary.map((name, code) => [name, code]));
    const parts: Int32Array[] = [];
    for (const name of new Set(values)) {
      const code = codes.get(name);
      if (code === undefined) continue;
      const rows = byThing.rows.subarray(byThing.starts[code]!, byThing.starts[code + 1]!);
      parts.push(rows.subarray(lowerBound(rows, from), lowerBound(rows, end)));
    }
    if (parts.length === 1) return parts[0]!;
    const out = new Int32Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of parts) {
      out.set(p, at);
      at += p.length;
    }
    return out.sort();
  }

  /** Row `row`'s document cut down to a projection's paths. */
  project(projection: Projection, row: number): Record<string, unknown> {
    const source: Record<string, unknown> = {};
    for (const { keys, column } of projection) {
      const value = valueAt(column, row);
      if (value === undefined) continue;
      let level = source;
      const last = keys.length - 1;
      for (let i = 0; i < last; i++) {
        const k = keys[i]!;
        level = (level[k] ??= {}) as Record<string, unknown>;
      }
      level[keys[last]!] = value;
    }
    return source;
  }

  /** Codes of `values` in a dictionary (`thingTypes`, `thingNames`) as a membership mask. */
  static mask(dictionary: readonly string[], values: readonly string[]): Uint8Array {
    const wanted = new Set(values);
    const mask = new Uint8Array(dictionary.length);
    dictionary.forEach((v, i) => (mask[i] = wanted.has(v) ? 1 : 0));
    return mask;
  }
}

/** Row numbers grouped by code, each group ascending: `rows[starts[c]..starts[c + 1])` hold code `c`. */
interface GroupedRows {
  starts: Int32Array;
  rows: Int32Array;
}

function groupRows(codes: Int32Array, distinct: number): GroupedRows {
  const starts = new Int32Array(distinct + 1);
  for (let r = 0; r < codes.length; r++) starts[codes[r]! + 1]!++;
  for (let c = 0; c < distinct; c++) starts[c + 1]! += starts[c]!;
  const at = starts.slice(0, distinct);
  const rows = new Int32Array(codes.length);
  for (let r = 0; r < codes.length; r++) rows[at[codes[r]!]!++] = r;
  return { starts, rows };
}

/** The first index of ascending `values` at or above `v`. */
function lowerBound(values: Int32Array, v: number): number {
  let lo = 0;
  let hi = values.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (values[mid]! < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function takeApart(
  obj: Record<string, unknown>,
  prefix: string,
  row: number,
  raw: Map<string, unknown[]>,
  count: number,
  parts: ColumnParts,
): void {
  for (const key of Object.keys(obj)) {
    const value = obj[key];
    const path = prefix === "" ? key : `${prefix}.${key}`;
    // A dotted key would answer `a.b` as if it were the path a → b; `__proto__` cannot be set as a key.
    if (key.includes(".") || key === "" || key === "__proto__") {
      parts.unanswerable.add(path);
      continue;
    }
    if (value === null || value === undefined) continue;
    if (Array.isArray(value)) {
      parts.unanswerable.add(path);
    } else if (typeof value === "object") {
      parts.objects.add(path);
      const inner = value as Record<string, unknown>;
      if (Object.keys(inner).length === 0) parts.unanswerable.add(path);
      else takeApart(inner, path, row, raw, count, parts);
    } else {
      let values = raw.get(path);
      if (!values) raw.set(path, (values = new Array<unknown>(count)));
      values[row] = value;
    }
  }
}

function valueAt(column: LeafColumn, row: number): unknown {
  switch (column.kind) {
    case "number": {
      const v = column.values[row]!;
      return Number.isNaN(v) ? undefined : v;
    }
    case "keyword": {
      const c = column.codes[row]!;
      return c < 0 ? undefined : column.dictionary[c];
    }
    case "mixed":
      return column.values[row];
  }
}

function toColumn(values: unknown[]): LeafColumn {
  let numbers = true;
  let strings = true;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (v === undefined) continue;
    if (typeof v !== "number") numbers = false;
    if (typeof v !== "string") strings = false;
    if (!numbers && !strings) break;
  }
  if (numbers) {
    const column = new Float64Array(values.length).fill(NaN);
    for (let i = 0; i < values.length; i++) if (values[i] !== undefined) column[i] = values[i] as number;
    return { kind: "number", values: column };
  }
  if (strings) {
    const dictionary = new Dictionary();
    const codes = new Int32Array(values.length).fill(-1);
    for (let i = 0; i < values.length; i++)
      if (values[i] !== undefined) codes[i] = dictionary.code(values[i] as string);
    return { kind: "keyword", codes, dictionary: dictionary.values };
  }
  return { kind: "mixed", values };
}
