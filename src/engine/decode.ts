/**
 * JSON bytes to values for the observation stream, without the UTF-8 string
 * that `JSON.parse` needs first, and with short strings interned: an
 * observation's keys and small values (`"status":"ok"`) repeat across the
 * stream, so they are made once and shared instead of allocated per message
 * and promoted into thing state, where they would become old-generation
 * garbage (bench/engine: GC was the largest single cost).
 *
 * Only the plain common case is decoded here: ASCII strings without escapes,
 * integers and decimals of at most 15 significant digits. Anything else
 * (escapes, non-ASCII, exponents, `__proto__`, malformed input) goes to
 * `JSON.parse` on the whole message, so the result, and the error for bad
 * bytes, are always exactly those of `JSON.parse`.
 */
export class JsonDecoder {
  private bytes: Latin1Buffer = EMPTY;
  private at = 0;
  private end = 0;
  /** Set when the fast path meets something it leaves to JSON.parse. */
  private bail = false;
  private readonly keys = new InternTable(10, true);
  private readonly values = new InternTable(12);

  /** The value of `bytes` as JSON.parse would give it; throws SyntaxError for what is not JSON. */
  decode(bytes: Uint8Array): unknown {
    this.bytes = (
      Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length)
    ) as Latin1Buffer;
    this.at = 0;
    this.end = bytes.length;
    this.bail = false;
    let value: unknown;
    try {
      this.skipSpace();
      value = this.value(0);
      this.skipSpace();
    } catch {
      this.bail = true; // a stack overflow on absurd nesting: JSON.parse decides
    }
    if (this.bail || this.at !== this.end) return JSON.parse(utf8(bytes)) as unknown;
    return value;
  }

  private skipSpace(): void {
    const b = this.bytes;
    let i = this.at;
    while (i < this.end) {
      const c = b[i]!;
      if (c !== SPACE && c !== LF && c !== CR && c !== TAB) break;
      i++;
    }
    this.at = i;
  }

  private value(depth: number): unknown {
    const c = this.bytes[this.at];
    if (c === QUOTE) return this.string(this.values);
    if ((c! >= ZERO && c! <= NINE) || c === MINUS) return this.number();
    if (c === LBRACE) return depth < MAX_DEPTH ? this.object(depth + 1) : this.fail();
    if (c === LBRACKET) return depth < MAX_DEPTH ? this.array(depth + 1) : this.fail();
    if (c === T && this.literal(TRUE)) return true;
    if (c === F && this.literal(FALSE)) return false;
    if (c === N && this.literal(NULL)) return null;
    return this.fail();
  }

  private fail(): undefined {
    this.bail = true;
    return undefined;
  }

  private literal(word: Uint8Array): boolean {
    const b = this.bytes;
    const i = this.at;
    if (i + word.length > this.end) return false;
    for (let k = 0; k < word.length; k++) if (b[i + k] !== word[k]) return false;
    this.at = i + word.length;
    return true;
  }

  private object(depth: number): Record<string, unknown> | undefined {
    const o: Record<string, unknown> = {};
    const b = this.bytes;
    this.at++;
    this.skipSpace();
    if (b[this.at] === RBRACE) {
      this.at++;
      return o;
    }
    for (;;) {
      if (b[this.at] !== QUOTE) return this.fail();
      const key = this.string(this.keys);
      if (key === undefined || key === "__proto__") return this.fail();
      this.skipSpace();
      if (b[this.at] !== COLON) return this.fail();
      this.at++;
      this.skipSpace();
      const v = this.value(depth);
      if (this.bail) return undefined;
      o[key] = v;
      this.skipSpace();
      const c = b[this.at++];
      if (c === RBRACE) return o;
      if (c !== COMMA) return this.fail();
      this.skipSpace();
    }
  }

  private array(depth: number): unknown[] | undefined {
    const a: unknown[] = [];
    const b = this.bytes;
    this.at++;
    this.skipSpace();
    if (b[this.at] === RBRACKET) {
      this.at++;
      return a;
    }
    for (;;) {
      const v = this.value(depth);
      if (this.bail) return undefined;
      a.push(v);
      this.skipSpace();
      const c = b[this.at++];
      if (c === RBRACKET) return a;
      if (c !== COMMA) return this.fail();
      this.skipSpace();
    }
  }

  /** A string without escapes or non-ASCII bytes; short ones come from `table`. */
  private string(table: InternTable): string | undefined {
    const b = this.bytes;
    const start = this.at + 1;
    let i = start;
    let hash = 0;
    for (;;) {
      if (i >= this.end) return this.fail();
      const c = b[i]!;
      if (c === QUOTE) break;
      // Escapes, control characters (invalid) and UTF-8 sequences: JSON.parse's business.
      if (c === BACKSLASH || c < 0x20 || c > 0x7e) return this.fail();
      hash = (Math.imul(hash, 31) + c) | 0;
      i++;
    }
    this.at = i + 1;
    return table.get(b, start, i, hash);
  }

  private number(): number | undefined {
    const b = this.bytes;
    const start = this.at;
    let i = start;
    const negative = b[i] === MINUS;
    if (negative) i++;
    const intStart = i;
    let mantissa = 0;
    while (i < this.end && b[i]! >= ZERO && b[i]! <= NINE) mantissa = mantissa * 10 + (b[i++]! - ZERO);
    let digits = i - intStart;
    // No digits, or a leading zero followed by digits: not JSON.
    if (digits === 0 || (digits > 1 && b[intStart] === ZERO)) return this.fail();
    let scale = 0;
    if (b[i] === DOT) {
      const fracStart = ++i;
      while (i < this.end && b[i]! >= ZERO && b[i]! <= NINE) mantissa = mantissa * 10 + (b[i++]! - ZERO);
      scale = i - fracStart;
      if (scale === 0) return this.fail();
      digits += scale;
    }
    const c = b[i];
    if (c === E || c === E_UPPER || digits > MAX_DIGITS) return this.fail();
    this.at = i;
    // Both operands are exact doubles (mantissa < 2^53, 10^scale <= 10^15), so the one
    // division is correctly rounded: the same double JSON.parse gives (Clinger's fast path).
    const v = scale === 0 ? mantissa : mantissa / POW10[scale]!;
    return negative ? -v : v;
  }
}

/**
 * Strings of up to 32 bytes by a hash of their bytes, one per slot; a
 * collision replaces the slot, so the table never grows. A hit is checked
 * byte by byte against the stored string, so it never returns a wrong string.
 */
class InternTable {
  private readonly slots: (string | undefined)[];
  private readonly mask: number;

  /** `internalize`: keys, which V8 looks up in its string table on every property store unless they are already there. */
  constructor(
    bits: number,
    private readonly internalize = false,
  ) {
    this.slots = new Array<string | undefined>(1 << bits).fill(undefined);
    this.mask = (1 << bits) - 1;
  }

  get(b: Latin1Buffer, start: number, end: number, hash: number): string {
    const length = end - start;
    if (length > MAX_INTERNED) return latin1(b, start, end);
    const slot = (hash ^ (hash >>> 15) ^ length) & this.mask;
    const known = this.slots[slot];
    if (known !== undefined && known.length === length && sameBytes(known, b, start)) return known;
    let s = latin1(b, start, end);
    if (this.internalize) s = Object.keys({ [s]: 0 })[0]!;
    this.slots[slot] = s;
    return s;
  }
}

function sameBytes(s: string, b: Uint8Array, start: number): boolean {
  for (let k = 0; k < s.length; k++) if (s.charCodeAt(k) !== b[start + k]) return false;
  return true;
}

/** Node's own latin1 decoder, without `toString`'s encoding dispatch (it is on every Buffer, undeclared). */
type Latin1Buffer = Buffer & { latin1Slice(start: number, end: number): string };

/** Printable ASCII only reaches here, so latin1 is the UTF-8 decoding. */
function latin1(b: Latin1Buffer, start: number, end: number): string {
  return b.latin1Slice(start, end);
}

function utf8(b: Uint8Array): string {
  return Buffer.from(b.buffer, b.byteOffset, b.length).toString("utf8");
}

const EMPTY = Buffer.alloc(0) as Latin1Buffer;
const MAX_INTERNED = 32;
const MAX_DIGITS = 15;
const MAX_DEPTH = 64;
const POW10 = Array.from({ length: MAX_DIGITS + 1 }, (_, k) => 10 ** k);
const TRUE = Buffer.from("true");
const FALSE = Buffer.from("false");
const NULL = Buffer.from("null");
const SPACE = 0x20;
const LF = 0x0a;
const CR = 0x0d;
const TAB = 0x09;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const DOT = 0x2e;
const MINUS = 0x2d;
const ZERO = 0x30;
const NINE = 0x39;
const E = 0x65;
const E_UPPER = 0x45;
const LBRACE = 0x7b;
const RBRACE = 0x7d;
const LBRACKET = 0x5b;
const RBRACKET = 0x5d;
const T = 0x74;
const F = 0x66;
const N = 0x6e;
