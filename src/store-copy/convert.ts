/** A value as better-sqlite3 reads it with safe integers on: INTEGER columns come as bigint, never rounded. */
export type SqliteValue = string | number | bigint | Buffer | null;

/** Turns a SQLite column's value into the text a PostgreSQL column takes in COPY (unescaped), or null. */
export type Convert = (value: SqliteValue) => string | null;

function integer(value: SqliteValue): number {
  if (typeof value === "bigint" || typeof value === "number") return Number(value);
  throw new Error(`not an integer: ${JSON.stringify(String(value))}`);
}

function text(value: SqliteValue): string {
  if (typeof value === "string") return value;
  throw new Error(`not text: ${String(value)}`);
}

/** How each kind of column is carried from its SQLite form to its PostgreSQL one. */
export const convert = {
  /**
   * The value as it is: text, integers (INTEGER into INTEGER or BIGINT), JSON text into JSON, and
   * ISO 8601 text into TIMESTAMPTZ, which PostgreSQL reads as the instant the text names.
   */
  same: (value) => {
    if (value === null) return null;
    if (Buffer.isBuffer(value)) throw new Error("a BLOB where no column of the copy holds one");
    return String(value);
  },
  /** Epoch milliseconds (INTEGER) into TIMESTAMPTZ. */
  msToTime: (value) => (value === null ? null : new Date(integer(value)).toISOString()),
  /** ISO 8601 text into epoch milliseconds (BIGINT). */
  isoToMs: (value) => {
    if (value === null) return null;
    const ms = Date.parse(text(value));
    if (Number.isNaN(ms)) throw new Error(`not an ISO 8601 time: ${JSON.stringify(value)}`);
    return String(ms);
  },
  /** 0 or 1 (INTEGER) into BOOLEAN. */
  flag: (value) => {
    if (value === null) return null;
    const n = integer(value);
    if (n !== 0 && n !== 1) throw new Error(`not a flag (0 or 1): ${n}`);
    return n === 1 ? "t" : "f";
  },
  /** ISO 8601 text, or the empty string SQLite keeps for "not yet", into TIMESTAMPTZ or NULL. */
  isoOrEmpty: (value) => (value === null || value === "" ? null : text(value)),
} satisfies Record<string, Convert>;
