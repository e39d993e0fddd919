/**
 * The decode's fast path: JSON.parse for the one shape nearly every observation has, read straight
 * from its bytes. Decoding text (`toString` then `JSON.parse`) was a quarter of the engine's time on
 * the bench workload; this reads the bytes once, makes no intermediate string, and gives resource
 * keys as the same strings every time (interned), so the engine's lookups by key find them at once.
 *
 * It reads a top-level object whose values are scalars or objects of scalars (`{thingName,
 * timestamp, state: {...}}`), keys and strings ASCII without escapes, any JSON whitespace. On
 * anything else it declines (returns `undefined`) and the caller runs JSON.parse, so what it returns,
 * when it returns, is what JSON.parse would: it declines on escapes, non-ASCII bytes, arrays, objects
 * deeper than one level (`nested`), duplicate keys, `__proto__`, leading zeros, truncated input and
 * trailing bytes. Numbers are JSON.parse's bit for bit: up to 2^53 exactly, decimals by Clinger's
 * fast path (one exact multiply or divide), the rest by `Number` of their text (correctly rounded,
 * as JSON.parse is).
 *
 * It also says where the input's `state` object is, when its bytes are exactly the JSON.stringify
 * of the object it returns (`StateSpan`): the observation store then keeps those bytes as the
 * stored document's state instead of stringifying the object again.
 */

const QUOTE = 0x22;
const COMMA = 0x2c;
const MINUS = 0x2d;
const PLUS = 0x2b;
const DOT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;
const COLON = 0x3a;
const BACKSLASH = 0x5c;
const OPEN = 0x7b;
const CLOSE = 0x7d;
const SPACE = 0x20;
const TAB = 0x09;
const LF = 0x0a;
const CR = 0x0d;
const LOWER_E = 0x65;
const UPPER_E = 0x45;

/** 2^53: below it every integer is a double, and sums and products of such stay exact while below it. */
const EXACT = 9007199254740992;
/** 10^0 to 10^22: the powers of ten a double holds exactly (Clinger's fast path). */
const POW10 = Array.from({ length: 23 }, (_, i) => Number(`1e${i}`));

/** Node's Buffer string makers without the argument checks of `toString` (they exist since Node 0.x, untyped). */
interface Slicing extends Buffer {
  latin1Slice(start: number, end: number): string;
}

/**
 * An interned key: its bytes, its string, the objects (by number) that last took it at the top level
 * and inside, to find duplicates (a key whose owner is the open object at its level is one), and the
 * keys seen after it, which the next input most likely has too.
 */
interface Key {
  bytes: Uint8Array;
  text: string;
  top: number;
  inner: number;
  /** The key that followed it in its object last time. */
  next: Key | undefined;
  /** The first key of the object that was its value last time, and how many members it had. */
  first: Key | undefined;
  size: number;
  /**
   * Whether it is still in the cache: a key replaced there is no guess any more, so that each bytes
   * have one key, and a duplicate finds the key its first occurrence took.
   */
  live: boolean;
  /**
   * The short strings last seen as its value in an inner object, by hash of their bytes (see
   * `scanValue`); undefined until one is, null once the key's values turned out too varied to cache.
   */
  values: (string | undefined)[] | undefined | null;
  /** Lookups and misses in `values` since the last look at how well it does. */
  lookups: number;
  misses: number;
  /**
   * All digits: an object orders such keys (array indexes) before the others, ascending, so an
   * object holding one may stringify in another order than its text's.
   */
  digits: boolean;
}

/**
 * The key cache: open addressing by hash, one key per slot, a new key replacing the old. Resource
 * keys are few (the thing types' resources), so it stays hot; hostile keys only churn it.
 */
const KEY_SLOTS = 1024;
const keys = new Array<Key | undefined>(KEY_SLOTS).fill(undefined);
/** Keys longer than this are not interned: the fast path declines them. */
const MAX_KEY = 64;
/** Each object scanned takes the next number, so a key's owners from earlier inputs are never the open ones. */
let objects = 0;
/** The numbers of the open top-level and inner objects. */
let openTop = 0;
let openInner = 0;
/** The first key of the last top-level object. */
let firstTop: Key | undefined;

/**
 * The objects the scan makes: plain objects (their prototype is Object.prototype, their constructor
 * Object), made by constructors only for the room V8 gives their instances. JSON.parse makes an
 * object with a slot inside it per property; `{}` has four, and a fifth resource went to a second
 * array (one more cache miss per read and per merge into the thing's state), while room for more
 * than the object holds is garbage the young generation copies. Instances of a constructor get the
 * room its first ones used (V8's slack tracking), so there is one constructor per size, its room
 * set here at load; an object is made with the room its key's last object had (the top level's,
 * the last top-level object's).
 */
const MAX_ROOM = 16;
const makers = Array.from({ length: MAX_ROOM + 1 }, (_, room) => {
  const make = function (this: Record<string, unknown>) {} as unknown as new () => Record<string, unknown>;
  make.prototype = Object.prototype;
  // Slack tracking ends after 7 instances: these.
  for (let i = 0; i < 8; i++) {
    const o = new make();
    for (let j = 0; j < room; j++) o[` ${j}`] = 0;
  }
  return make;
});
/** How many members the last top-level object had. */
let topSize = 3;

/**
 * Whether the inner object being scanned is, so far, its JSON.stringify text byte for byte: no
 * whitespace, numbers as JavaScript prints them, no digit keys (strings are printable ASCII
 * without escapes, keys unique, by what the scan accepts at all). Set before the `state` object
 * is scanned, cleared by what breaks it, read once it is closed.
 */
let canonical = true;

/**
 * Where an input's `state` object's text is, bytes [start, end), when that text is the JSON.stringify
 * of the object `scanObservation` returned for it; start -1 when it is not, or there is none.
 */
export interface StateSpan {
  start: number;
  end: number;
}

/** What a scan returns to decline (a value never is this object). */
const DECLINE: unknown = Object.freeze({});
/** Where the scan is: each scanner starts at `pos` and leaves it after what it read. */
let pos = 0;

/**
 * The object `bytes` hold as JSON.parse would give it, or `undefined` when it declines (see the
 * header); `span`, when given, is filled with where its `state` object's text is (see `StateSpan`).
 */
export function scanObservation(bytes: Uint8Array, span?: StateSpan): Record<string, unknown> | undefined {
  const b = (Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length)) as Slicing;
  stateStart = -1;
  const n = b.length;
  let i = 0;
  if (b[0]! <= SPACE) i = skip(b, 0, n);
  if (i >= n || b[i] !== OPEN) return undefined;
  // Wrapping the counter only risks taking a key for a duplicate, or a slot for taken: declining.
  if (objects > 0x3fffffff) objects = 0;
  pos = i + 1;
  const o = scanObject(b, n, undefined);
  if (o === DECLINE) return undefined;
  i = pos;
  if (i < n && skip(b, i, n) !== n) return undefined;
  if (span !== undefined) {
    span.start = stateStart;
    span.end = stateEnd;
  }
  return o as Record<string, unknown>;
}

/** The last scan's `state` object, as `StateSpan` gives it. */
let stateStart = -1;
let stateEnd = -1;
/** Interned `state`, the key whose object's text a scan reports. */
const STATE = internalized("state");

/**
 * An object from after its `{`; DECLINE to decline. `parent`: the key it is the value of (an inner
 * object, whose values are scalars), undefined for the top level.
 */
function scanObject(b: Slicing, n: number, parent: Key | undefined): unknown {
  const outer = parent === undefined;
  if (outer) openTop = ++objects;
  else openInner = ++objects;
  const o = new makers[outer ? topSize : parent.size]!();
  let size = 0;
  let i = pos;
  if (b[i]! <= SPACE) i = skipSpace(b, i, n);
  if (b[i] === CLOSE) {
    pos = i + 1;
    return o;
  }
  let last: Key | undefined;
  for (;;) {
    if (b[i] !== QUOTE) return DECLINE;
    const guess = last !== undefined ? last.next : outer ? firstTop : parent.first;
    const k = scanKey(b, i + 1, n, guess, outer);
    if (k === undefined) return DECLINE;
    if (k !== guess) {
      if (last !== undefined) last.next = k;
      else if (outer) firstTop = k;
      else parent.first = k;
    }
    last = k;
    if (k.digits) canonical = false;
    i = pos;
    if (b[i]! <= SPACE) i = skipSpace(b, i, n);
    if (b[i] !== COLON) return DECLINE;
    i++;
    if (b[i]! <= SPACE) i = skipSpace(b, i, n);
    const c = b[i];
    pos = i;
    let v: unknown;
    if (c === QUOTE) v = outer ? scanString(b, n) : scanValue(b, n, k);
    else if (c === OPEN) {
      if (!outer) return DECLINE;
      pos = i + 1;
      canonical = true;
      v = scanObject(b, n, k);
      if (k.text === STATE && canonical) {
        stateStart = i;
        stateEnd = pos;
      }
    } else v = scanLiteral(b, c);
    if (v === DECLINE) return DECLINE;
    o[k.text] = v;
    size++;
    i = pos;
    if (b[i]! <= SPACE) i = skipSpace(b, i, n);
    const d = b[i];
    if (d === COMMA) {
      i++;
      if (b[i]! <= SPACE) i = skipSpace(b, i, n);
    } else if (d === CLOSE) {
      pos = i + 1;
      if (size > MAX_ROOM) size = MAX_ROOM;
      if (outer) topSize = size;
      else parent.size = size;
      return o;
    } else return DECLINE;
  }
}

/**
 * A key from after its opening quote (`guess`: the key expected there), `pos` after its closing
 * quote; undefined to decline.
 */
function scanKey(b: Slicing, start: number, n: number, guess: Key | undefined, outer: boolean): Key | undefined {
  let k = guess;
  let end: number;
  if (k !== undefined && k.live && sameBytes(k.bytes, b, start) && b[start + k.bytes.length] === QUOTE) {
    end = start + k.bytes.length;
  } else {
    end = stringEnd(b, start, n);
    if (end < 0 || end - start > MAX_KEY) return undefined;
    let h = 0;
    for (let i = start; i < end; i++) h = (Math.imul(h, 31) + b[i]!) | 0;
    const slot = (h ^ (h >>> 10)) & (KEY_SLOTS - 1);
    k = keys[slot];
    if (k === undefined || k.bytes.length !== end - start || !sameBytes(k.bytes, b, start)) {
      // Replacing a key an open object holds would hide a later duplicate of it: decline (a rare collision).
      // A top-level key is read while only the top object is open: the last inner object is closed.
      if (k !== undefined) {
        if (k.top === openTop || (!outer && k.inner === openInner)) return undefined;
        k.live = false;
      }
      const text = b.latin1Slice(start, end);
      // Assigned, "__proto__" would set the object's prototype (JSON.parse makes it an own key).
      if (text === "__proto__") return undefined;
      k = {
        // A copy: a Buffer's slice is a view, which would keep (and follow changes to) the input's memory.
        bytes: new Uint8Array(b.subarray(start, end)),
        text: internalized(text),
        top: -1,
        inner: -1,
        next: undefined,
        first: undefined,
        size: 0,
        live: true,
        values: undefined,
        lookups: 0,
        misses: 0,
        digits: /^[0-9]+$/.test(text),
      };
      keys[slot] = k;
    }
  }
  // Already a key of this object: assigning again would do as JSON.parse does, but the text would not
  // be the object's JSON any more; a rare case, declined.
  if (outer) {
    if (k.top === openTop) return undefined;
    k.top = openTop;
  } else {
    if (k.inner === openInner) return undefined;
    k.inner = openInner;
  }
  pos = end + 1;
  return k;
}

/** Whether `b` holds `bytes` at `start` (it may run past `b`'s end: reads there are undefined). */
function sameBytes(bytes: Uint8Array, b: Uint8Array, start: number): boolean {
  for (let j = 0; j < bytes.length; j++) if (bytes[j] !== b[start + j]) return false;
  return true;
}

/** The string as V8 keeps property names (one copy in its string table), so that keyed access does not look it up. */
function internalized(text: string): string {
  return Object.keys({ [text]: 0 })[0]!;
}

/** A string at `pos` (its opening quote); DECLINE to decline. */
function scanString(b: Slicing, n: number): unknown {
  const start = pos + 1;
  const end = stringEnd(b, start, n);
  if (end < 0) return DECLINE;
  pos = end + 1;
  return b.latin1Slice(start, end);
}

/**
 * Short string values of a resource (a status, a mode) are cached per key: the same bytes give the
 * same string, made once. A thing's state keeps its resources' values until its next observation,
 * so each new string outlives the young generation and is copied and promoted, and the store of a
 * young string into an old state is one more slot for every scavenge to visit; a cached one is old.
 * Values longer than `MAX_VALUE` bytes (positions, ids) are not cached, nor those of a key that
 * misses more than one lookup in `VALUE_MISS_SHARE` over a window of `VALUE_WINDOW` (the cache
 * would only churn), for as long as the key stays in the key cache.
 */
const VALUE_SLOTS = 256;
const MAX_VALUE = 16;
const VALUE_WINDOW = 1024;
const VALUE_MISS_SHARE = 4;

/** A string value of the inner key `k` at `pos` (its opening quote), through `k`'s cache; DECLINE to decline. */
function scanValue(b: Slicing, n: number, k: Key): unknown {
  const values = k.values;
  if (values === null) return scanString(b, n);
  const start = pos + 1;
  const end = stringEnd(b, start, n);
  if (end < 0) return DECLINE;
  pos = end + 1;
  const length = end - start;
  if (length > MAX_VALUE) return b.latin1Slice(start, end);
  let h = 0;
  for (let i = start; i < end; i++) h = (Math.imul(h, 31) + b[i]!) | 0;
  const slot = (h ^ (h >>> 8)) & (VALUE_SLOTS - 1);
  let text = values === undefined ? undefined : values[slot];
  if (text === undefined || text.length !== length || !sameText(text, b, start)) {
    text = b.latin1Slice(start, end);
    if (values === undefined) (k.values = new Array<string | undefined>(VALUE_SLOTS).fill(undefined))[slot] = text;
    else values[slot] = text;
    k.misses++;
  }
  if (++k.lookups === VALUE_WINDOW) judgeValues(k);
  return text;
}

/** At the end of a window of lookups: stop caching the key's values if too many missed, else count again. */
function judgeValues(k: Key): void {
  if (k.misses * VALUE_MISS_SHARE > k.lookups) k.values = null;
  k.lookups = 0;
  k.misses = 0;
}

/** Whether `b` holds `text`'s characters (latin1) at `start`. */
function sameText(text: string, b: Uint8Array, start: number): boolean {
  for (let j = 0; j < text.length; j++) if (text.charCodeAt(j) !== b[start + j]) return false;
  return true;
}

/** The closing quote of a string from `i` of printable ASCII without escapes; -1 for any other. */
function stringEnd(b: Uint8Array, i: number, n: number): number {
  for (;;) {
    if (i >= n) return -1;
    const c = b[i]!;
    if (c === QUOTE) return i;
    if (c < SPACE || c === BACKSLASH || c > 0x7e) return -1;
    i++;
  }
}

/** A number, true, false or null at `pos` (`c` its first byte); DECLINE to decline. */
function scanLiteral(b: Slicing, c: number | undefined): unknown {
  const i = pos;
  if (c === MINUS || (c !== undefined && c >= ZERO && c <= NINE)) return scanNumber(b);
  if (c === 0x74 && b[i + 1] === 0x72 && b[i + 2] === 0x75 && b[i + 3] === 0x65) {
    pos = i + 4;
    return true;
  }
  if (c === 0x66 && b[i + 1] === 0x61 && b[i + 2] === 0x6c && b[i + 3] === 0x73 && b[i + 4] === 0x65) {
    pos = i + 5;
    return false;
  }
  if (c === 0x6e && b[i + 1] === 0x75 && b[i + 2] === 0x6c && b[i + 3] === 0x6c) {
    pos = i + 4;
    return null;
  }
  return DECLINE;
}

/**
 * A JSON number at `pos`: the double JSON.parse makes of it; DECLINE to decline (reads past the end
 * are undefined: not digits). Clears `canonical` unless JSON.stringify prints the double as the same
 * text (see `printsAsText`).
 */
function scanNumber(b: Slicing): unknown {
  const start = pos;
  let i = start;
  const negative = b[i] === MINUS;
  if (negative) i++;
  // The digits as an integer (exact while below 2^53) and the power of ten to scale it by.
  let m = 0;
  let exp10 = 0;
  let c = b[i];
  if (c === ZERO) {
    c = b[++i];
    // JSON has no leading zeros: JSON.parse refuses the text.
    if (c !== undefined && c >= ZERO && c <= NINE) return DECLINE;
  } else if (c !== undefined && c >= ZERO && c <= NINE) {
    do {
      m = m * 10 + (c - ZERO);
      c = b[++i];
    } while (c !== undefined && c >= ZERO && c <= NINE);
  } else return DECLINE;
  let lastDigit = ZERO;
  if (c === DOT) {
    c = b[++i];
    if (c === undefined || c < ZERO || c > NINE) return DECLINE;
    do {
      m = m * 10 + (c - ZERO);
      exp10--;
      lastDigit = c;
      c = b[++i];
    } while (c !== undefined && c >= ZERO && c <= NINE);
  }
  let exponent = false;
  if (c === LOWER_E || c === UPPER_E) {
    exponent = true;
    c = b[++i];
    const minus = c === MINUS;
    if (minus || c === PLUS) c = b[++i];
    if (c === undefined || c < ZERO || c > NINE) return DECLINE;
    let e = 0;
    do {
      // Past a million the exponent only says "out of range", which Number() below handles.
      if (e < 1_000_000) e = e * 10 + (c - ZERO);
      c = b[++i];
    } while (c !== undefined && c >= ZERO && c <= NINE);
    exp10 += minus ? -e : e;
  }
  pos = i;
  // m below 2^53 is exact (had a step reached 2^53 it would still be at or above it, rounding being monotone).
  if (m < EXACT && exp10 >= -22 && exp10 <= 22) {
    const v = exp10 === 0 ? m : exp10 > 0 ? m * POW10[exp10]! : m / POW10[-exp10]!;
    if (canonical && !printsAsText(v, m, negative, exponent, exp10, lastDigit)) canonical = false;
    return negative ? -v : v;
  }
  canonical = false;
  // Number() and JSON.parse both round correctly, and a JSON number's text is a JS numeric literal's.
  return Number(b.latin1Slice(start, i));
}

/**
 * Whether JSON.stringify prints `v` (the magnitude of a number whose text had the digits `m`, an
 * exponent or not, `-exp10` digits after the point, the last of them `lastDigit`) as that text.
 * An integer below 2^53 prints as its digits, but -0 prints as 0. A decimal prints as its shortest
 * digits that read back as the double: with at most 15 significant digits those are the text's own
 * (two decimals of 15 digits never read as one double), less trailing zeros; and in exponent form
 * below 1e-6.
 */
function printsAsText(
  v: number,
  m: number,
  negative: boolean,
  exponent: boolean,
  exp10: number,
  lastDigit: number,
): boolean {
  if (exponent) return false;
  if (exp10 === 0) return !(negative && m === 0);
  return lastDigit !== ZERO && m < 1e15 && v >= 1e-6;
}

/** As `skip`, where the whitespace is inside an object: its text is no longer JSON.stringify's. */
function skipSpace(b: Uint8Array, i: number, n: number): number {
  const j = skip(b, i, n);
  if (j !== i) canonical = false;
  return j;
}

/** The index of the first byte at or after `i` that is not JSON whitespace. */
function skip(b: Uint8Array, i: number, n: number): number {
  while (i < n) {
    const c = b[i];
    if (c !== SPACE && c !== LF && c !== CR && c !== TAB) return i;
    i++;
  }
  return i;
}
