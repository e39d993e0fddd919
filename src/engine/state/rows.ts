import { Dictionary, type Db } from "../../store/index.js";

/**
 * Thing states as the table takes them: documents already JSON, made on the engine's thread when
 * the batch that changed them is done (later batches go on changing the objects); the numbers of
 * a row in `numbers`, the last sources once each in `sources`.
 */
export interface StateRows {
  length: number;
  thingName: string[];
  doc: string[];
  /** `NUMBERS` a row: ts, seq, last offset (NaN: none), last source as its index in `sources` (-1: none). */
  numbers: Float64Array;
  sources: string[];
}

/** Values per row in `StateRows.numbers`. */
const NUMBERS = 4;

/** Rows one statement writes at once: a statement step per 32 rows costs less than one per row. */
const ROWS_PER_STATEMENT = 32;
/** Values bound per row. */
const COLUMNS = 6;

/**
 * `StateRows` as posted to the writer thread. A structured clone copies an array value by value:
 * the names and documents go as one string each (the end of every row's part in `ends`, two a
 * row, so that nothing a name may hold is taken for a separator), the numbers as the typed array
 * they are, and the post is a few blocks of bytes rather than six arrays of values.
 */
export interface PostedRows {
  length: number;
  names: string;
  docs: string;
  /** Per row: where its name ends in `names`, where its document ends in `docs`. */
  ends: Uint32Array;
  numbers: Float64Array;
  sources: string[];
}

/** Rows added one by one, at most `capacity` of them. */
export class RowMaker {
  readonly rows: StateRows;
  private readonly sources = new Dictionary();

  constructor(capacity: number) {
    this.rows = {
      length: 0,
      thingName: [],
      doc: [],
      numbers: new Float64Array(capacity * NUMBERS),
      sources: this.sources.values,
    };
  }

  add(
    thingName: string,
    ts: number,
    seq: number,
    lastSource: string | null,
    lastOffset: number | null,
    doc: string,
  ): void {
    const rows = this.rows;
    const at = rows.length * NUMBERS;
    rows.thingName.push(thingName);
    rows.doc.push(doc);
    rows.numbers[at] = ts;
    rows.numbers[at + 1] = seq;
    rows.numbers[at + 2] = lastOffset ?? NaN;
    rows.numbers[at + 3] = lastSource === null ? -1 : this.sources.code(lastSource);
    rows.length++;
  }

  /** Row `i` of `from` as it is: its numbers copied, its source coded in these rows' `sources`. */
  copy(from: StateRows, i: number): void {
    const rows = this.rows;
    const at = rows.length * NUMBERS;
    const n = i * NUMBERS;
    const source = from.numbers[n + 3]!;
    rows.thingName.push(from.thingName[i]!);
    rows.doc.push(from.doc[i]!);
    rows.numbers.set(from.numbers.subarray(n, n + 3), at);
    rows.numbers[at + 3] = source < 0 ? -1 : this.sources.code(from.sources[source]!);
    rows.length++;
  }
}

/** The rows as posted to the writer thread (`PostedRows`). */
export function postedRows(rows: StateRows): PostedRows {
  const n = rows.length;
  const ends = new Uint32Array(2 * n);
  let name = 0;
  let doc = 0;
  for (let i = 0; i < n; i++) {
    ends[2 * i] = name += rows.thingName[i]!.length;
    ends[2 * i + 1] = doc += rows.doc[i]!.length;
  }
  return {
    length: n,
    names: rows.thingName.join(""),
    docs: rows.doc.join(""),
    ends,
    // A view posts its whole buffer: only the rows made.
    numbers: n * NUMBERS === rows.numbers.length ? rows.numbers : rows.numbers.slice(0, n * NUMBERS),
    sources: rows.sources,
  };
}

/** Posted rows taken apart again, on the writer thread. */
export function receivedRows(posted: PostedRows): StateRows {
  const n = posted.length;
  const thingName = new Array<string>(n);
  const doc = new Array<string>(n);
  let name = 0;
  let at = 0;
  for (let i = 0; i < n; i++) {
    const nameEnd = posted.ends[2 * i]!;
    const docEnd = posted.ends[2 * i + 1]!;
    thingName[i] = posted.names.slice(name, nameEnd);
    doc[i] = posted.docs.slice(at, docEnd);
    name = nameEnd;
    at = docEnd;
  }
  return { length: n, thingName, doc, numbers: posted.numbers, sources: posted.sources };
}

/**
 * Rows of several flushes, in order, each thing once with its last state: the writer thread
 * writes the flushes queued behind a commit as one.
 */
export function latestRows(flushes: readonly StateRows[]): StateRows {
  if (flushes.length === 1) return flushes[0]!;
  const last = new Map<string, [StateRows, number]>();
  for (const rows of flushes) for (let i = 0; i < rows.length; i++) last.set(rows.thingName[i]!, [rows, i]);
  const out = new RowMaker(last.size);
  for (const [rows, i] of last.values()) out.copy(rows, i);
  return out.rows;
}

/**
 * Puts row `i`'s values into `into` from `at`, in the table's order: thing_name, ts, seq,
 * last_source, last_offset, doc.
 */
export type RowValues = (i: number, into: unknown[], at: number) => void;

/** The values of `rows` (the writer thread's). */
export function valuesOf(rows: StateRows): RowValues {
  const { thingName, doc, numbers, sources } = rows;
  return (i, into, at) => {
    const n = i * NUMBERS;
    const offset = numbers[n + 2]!;
    const source = numbers[n + 3]!;
    into[at] = thingName[i]!;
    into[at + 1] = numbers[n]!;
    into[at + 2] = numbers[n + 1]!;
    into[at + 3] = source < 0 ? null : sources[source]!;
    into[at + 4] = Number.isNaN(offset) ? null : offset;
    into[at + 5] = doc[i]!;
  };
}

/**
 * Writes `n` rows on `db` in the caller's transaction, 32 to a statement: the engine's thread
 * (its values read straight from the states) and the writer thread (from `StateRows`) alike.
 * INSERT OR REPLACE, not an upsert: a row carries every column, the table has no other index,
 * trigger or foreign key, so replacing the row is the same write, and cheaper. Rows of one
 * thing later replace earlier ones, as one statement per row would.
 */
export function stateWriter(db: Db): (n: number, row: RowValues) => void {
  const sql = (n: number): string =>
    `INSERT OR REPLACE INTO engine_thing_state (thing_name, ts, seq, last_source, last_offset, doc) VALUES ${Array.from(
      { length: n },
      () => "(?, ?, ?, ?, ?, ?)",
    ).join(", ")}`;
  const one = db.prepare<unknown[]>(sql(1));
  const many = db.prepare<unknown[]>(sql(ROWS_PER_STATEMENT));
  const values: unknown[] = new Array<unknown>(ROWS_PER_STATEMENT * COLUMNS);
  const single: unknown[] = new Array<unknown>(COLUMNS);
  return (n, row) => {
    let i = 0;
    for (; i + ROWS_PER_STATEMENT <= n; i += ROWS_PER_STATEMENT) {
      for (let k = 0; k < ROWS_PER_STATEMENT; k++) row(i + k, values, k * COLUMNS);
      many.run(values);
    }
    for (; i < n; i++) {
      row(i, single, 0);
      one.run(single);
    }
  };
}
