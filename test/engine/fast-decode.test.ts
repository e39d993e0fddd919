import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { workload } from "../../bench/engine/workload.js";
import {
  decodeBytes,
  decodeBytesByJsonParse,
  decodeDevicePayload,
  decodeValue,
  scanObservation,
  type Ingested,
  type SourcePosition,
} from "../../src/engine/index.js";

const position: SourcePosition = { source: "kafka:t", partition: 0, offset: "7" };
const bytes = (text: string): Buffer => Buffer.from(text, "utf8");

/** JSON.parse's value, or "throws". */
function parsed(b: Uint8Array): unknown {
  try {
    return JSON.parse(Buffer.from(b.buffer, b.byteOffset, b.length).toString("utf8"));
  } catch {
    return "throws";
  }
}

/** Every object's keys in order, depth first: toStrictEqual does not compare key order. */
function keyOrder(v: unknown): unknown {
  if (v === null || typeof v !== "object") return null;
  if (Array.isArray(v)) return v.map(keyOrder);
  return Object.entries(v).map(([k, x]) => [k, keyOrder(x)]);
}

/** The fast path's contract on one input: JSON.parse's value (numbers by Object.is, key order) or a decline. */
function agrees(b: Uint8Array): boolean {
  const fast = scanObservation(b);
  const slow = parsed(b);
  if (fast !== undefined) {
    expect(fast).toStrictEqual(slow);
    expect(keyOrder(fast)).toStrictEqual(keyOrder(slow));
  }
  const ingested = stateTextChecked(decodeBytes(b, position, { key: "the-key" }));
  const reference = stateTextChecked(decodeBytesByJsonParse(b, position, { key: "the-key" }));
  expect(ingested).toStrictEqual(reference);
  expect(keyOrder(ingested)).toStrictEqual(keyOrder(reference));
  const device = decodeDevicePayload("dev-1", b, position).map(stateTextChecked);
  if (!Array.isArray(slow))
    expect(device).toStrictEqual([stateTextChecked(decodeBytesByJsonParse(b, position, { device: "dev-1" }))]);
  return true;
}

/** How often the fast path reported the state's text, and how often it was asked: the generators must reach it. */
const stateTexts = { found: 0, decoded: 0 };

/**
 * The state's text the decode reports, if any, is JSON.stringify's of the decoded state, byte for
 * byte (what the observation store keeps); returns the record without it, for comparison with the
 * JSON.parse path's, which reports none.
 */
function stateTextChecked(item: Ingested): Record<string, unknown> {
  const { stateBytes, stateStart = -1, stateEnd = -1, ...rest } = item;
  if (item.observation !== undefined) stateTexts.decoded++;
  if (stateBytes !== undefined && stateStart >= 0) {
    stateTexts.found++;
    expect(item.observation).toBeDefined();
    expect(stateBytes.subarray(stateStart, stateEnd).toString("latin1")).toBe(JSON.stringify(item.observation!.state));
  }
  return rest;
}

// Generators: JSON text of the workload's family of shapes, written with and without whitespace.
const asciiText = fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)) });
const anyText = fc.oneof(asciiText, fc.string({ unit: "binary" }), fc.string({ unit: "grapheme-composite" }));
/** Mostly what the fast path takes, sometimes not. */
const mostly = <T>(usual: fc.Arbitrary<T>, unusual: fc.Arbitrary<T>): fc.Arbitrary<T> =>
  fc.oneof({ arbitrary: usual, weight: 6 }, { arbitrary: unusual, weight: 1 });
const text = mostly(asciiText, anyText);
const key = mostly(
  fc.oneof(fc.constantFrom("temp", "hum", "press", "status", "latlng"), asciiText),
  fc.oneof(fc.constantFrom("__proto__", "constructor", "toString", "0", "12", ""), anyText),
);
/** Numbers' texts, valid JSON or not (leading zeros, bare dots, huge exponents, many digits). */
const numberText = fc.oneof(
  fc.double().map((d) => JSON.stringify(d)),
  fc.integer().map(String),
  fc.integer({ min: 0, max: 2 ** 53 + 10 }).map(String),
  fc.constantFrom(
    "-0",
    "0",
    "-0.0",
    "1e21",
    "1E5",
    "1e+5",
    "1e-5",
    "0.1",
    "1.7976931348623157e308",
    "1.7976931348623159e308",
    "5e-324",
    "2e-324",
    "1e400",
    "-1e400",
    "9007199254740993",
    "9007199254740992",
    "18014398509481985",
    "123456789012345678901234567890",
    "0.30000000000000004",
    "01",
    "-01",
    "00",
    "1.",
    ".5",
    "-",
    "+1",
    "1e",
    "1e+",
    "0x10",
    "Infinity",
    "NaN",
    "1_000",
  ),
  fc
    .tuple(
      fc.boolean(),
      fc.oneof(fc.stringMatching(/^[1-9][0-9]{0,24}$/), fc.constant("0"), fc.stringMatching(/^[0-9]{1,25}$/)),
      fc.option(fc.stringMatching(/^[0-9]{0,25}$/)),
      fc.option(fc.tuple(fc.constantFrom("e", "E"), fc.constantFrom("", "+", "-"), fc.stringMatching(/^[0-9]{0,4}$/))),
    )
    .map(
      ([minus, int, frac, exp]) =>
        `${minus ? "-" : ""}${int}${frac === null ? "" : `.${frac}`}${exp === null ? "" : exp.join("")}`,
    ),
);
const scalarText = mostly(
  fc.oneof(
    numberText,
    text.map((s) => JSON.stringify(s)),
    fc.constantFrom("true", "false", "null"),
  ),
  fc.constantFrom("tru", "nul", "fals", "True", '"\\u0041"', '"a\\"b"', '"\\/"', "'a'", '"a'),
);
const ws = fc.stringMatching(/^[ \t\n\r]{0,3}$/);
/** An object's text from members' texts, whitespace around each token. */
const objectText = (member: fc.Arbitrary<[string, string]>): fc.Arbitrary<string> =>
  fc
    .tuple(fc.array(fc.tuple(ws, member, ws, ws), { maxLength: 7 }), ws)
    .map(
      ([members, end]) =>
        `{${members.map(([a, [k, v], b, c]) => `${a}${JSON.stringify(k)}${b}:${c}${v}`).join(",")}${end}}`,
    );
const stateText = objectText(fc.tuple(key, scalarText));
const timestampText = fc.oneof(
  { arbitrary: fc.nat().map(String), weight: 4 },
  numberText,
  fc.date({ noInvalidDate: true }).map((d) => JSON.stringify(d.toISOString())),
  fc.constantFrom('"1763000000123"', '"2025-11-13"', '"yesterday"', "null", '""'),
);
const member: fc.Arbitrary<[string, string]> = fc.oneof(
  fc.tuple(
    fc.constant("thingName"),
    text.map((s) => JSON.stringify(s)),
  ),
  fc.tuple(fc.constant("timestamp"), timestampText),
  fc.tuple(fc.constant("state"), mostly(stateText, fc.oneof(scalarText, fc.constant("[]")))),
  fc.tuple(fc.constant("nested"), fc.constantFrom('[{"state":{}}]', "[]", "{}", "1")),
  fc.tuple(key, scalarText),
);
/** Observations as they usually come: thingName, timestamp, state, in that order, then anything. */
const observationText = fc
  .tuple(
    text,
    timestampText,
    stateText,
    mostly(fc.constant<[string, string][]>([]), fc.array(member, { maxLength: 2 })),
    ws,
    ws,
    mostly(fc.constant(""), fc.constantFrom(" ", "\n", "x", ",", "}", "\u00a0", "\ufeff")),
  )
  .map(
    ([thing, ts, state, more, a, b, trailing]) =>
      `${a}{"thingName":${JSON.stringify(thing)},"timestamp":${ts},"state":${state}${more
        .map(([k, v]) => `,${JSON.stringify(k)}:${v}`)
        .join("")}}${b}${trailing}`,
  );
const w = workload({ types: 3, thingsPerType: 10 });
const workloadMessage = fc.nat({ max: 100_000 }).map((i) => w.message(i));

describe("the fast path decodes as JSON.parse does, or declines", () => {
  it("workload messages: taken, and equal to JSON.parse", () => {
    for (let i = 0; i < 200; i++) {
      const b = bytes(w.message(i));
      expect(scanObservation(b)).toBeDefined();
      agrees(b);
    }
  });

  it("observation-shaped text, with any members, numbers, strings and whitespace", () => {
    fc.assert(
      fc.property(observationText, (text) => agrees(bytes(text))),
      { numRuns: 3000 },
    );
  });

  it("any JSON value, as JSON.stringify writes it and indented", () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.constantFrom(undefined, 1, "\t"), (v, indent) =>
        agrees(bytes(JSON.stringify(v, null, indent) ?? "null")),
      ),
      { numRuns: 2000 },
    );
  });

  it("workload messages with bytes changed, inserted or cut", () => {
    const edit = fc.oneof(
      fc.tuple(fc.constant("set" as const), fc.nat(), fc.integer({ min: 0, max: 255 })),
      fc.tuple(fc.constant("insert" as const), fc.nat(), fc.integer({ min: 0, max: 255 })),
      fc.tuple(fc.constant("cut" as const), fc.nat(), fc.constant(0)),
    );
    const special = fc.constantFrom(0x22, 0x5c, 0x7b, 0x7d, 0x2c, 0x3a, 0x20, 0x30, 0x2d, 0x2e, 0x65, 0x80, 0xff, 0xc3);
    fc.assert(
      fc.property(
        workloadMessage,
        fc.array(fc.oneof(edit, fc.tuple(fc.constant("set" as const), fc.nat(), special)), {
          minLength: 1,
          maxLength: 3,
        }),
        (text, edits) => {
          let b = [...bytes(text)];
          for (const [op, at, byte] of edits) {
            const i = at % (b.length + 1);
            if (op === "set") b[Math.min(i, b.length - 1)] = byte;
            else if (op === "insert") b.splice(i, 0, byte);
            else b = b.slice(0, i);
          }
          return agrees(Uint8Array.from(b));
        },
      ),
      { numRuns: 3000 },
    );
  });

  it("keys stay what they were when the input's memory is reused", () => {
    const first = bytes('{"zq1":1}');
    expect(scanObservation(first)).toStrictEqual({ zq1: 1 });
    first.set(bytes("zq2"), 2);
    expect(scanObservation(bytes('{"zq2":1}'))).toStrictEqual({ zq2: 1 });
  });

  it("a top-level key in the cache slot of the last inner object's key is read, not declined", () => {
    // The key cache's slot of a key (as scanKey hashes it, over 1,024 slots): the first key in the
    // slot of the inner key "aa" replaces it. The inner object holding "aa" is closed by then, so
    // nothing can hide a duplicate of it; only a key of an object still open forces a decline.
    const slot = (text: string): number => {
      let h = 0;
      for (let i = 0; i < text.length; i++) h = (Math.imul(h, 31) + text.charCodeAt(i)) | 0;
      return (h ^ (h >>> 10)) & 1023;
    };
    let other = 0;
    while (slot(`k${other}`) !== slot("aa")) other++;
    expect(scanObservation(bytes('{"state":{"aa":1}}'))).toStrictEqual({ state: { aa: 1 } });
    expect(scanObservation(bytes(`{"k${other}":1}`))).toStrictEqual({ [`k${other}`]: 1 });
    // Still declined: the same replacement while the object holding the key is open.
    expect(scanObservation(bytes(`{"aa":1,"state":{"k${other}":1,"aa":2}}`))).toBeUndefined();
  });

  it("a Uint8Array that is not a Buffer, and a view into a larger buffer", () => {
    const text = w.message(3);
    const padded = bytes(`xx${text}yy`);
    const view = new Uint8Array(padded.buffer, padded.byteOffset + 2, padded.length - 4);
    expect(scanObservation(view)).toStrictEqual(JSON.parse(text));
    expect(scanObservation(Uint8Array.from(bytes(text)))).toStrictEqual(JSON.parse(text));
  });
});

describe("the state's text is reported only where it is JSON.stringify's", () => {
  /** The decode's state text of an observation with this state text, or undefined when it reports none. */
  const reported = (state: string): string | undefined => {
    const item = decodeBytes(bytes(`{"thingName":"a","timestamp":1,"state":${state}}`), position);
    expect(item.observation).toBeDefined();
    stateTextChecked(item);
    const { stateBytes, stateStart = -1, stateEnd = -1 } = item;
    return stateBytes === undefined || stateStart < 0 ? undefined : stateBytes.toString("latin1", stateStart, stateEnd);
  };

  it("workload messages: every one", () => {
    for (let i = 0; i < 200; i++) {
      const text = w.message(i);
      expect(reported(JSON.stringify((JSON.parse(text) as { state: unknown }).state))).toBeDefined();
      const item = decodeBytes(bytes(text), position);
      expect(item.stateStart).toBeGreaterThan(0);
    }
  });

  it.each([
    ["integers, strings, literals", '{"temp":21,"n":-7,"big":9007199254740991,"s":"a b","t":true,"f":false,"z":null}'],
    ["decimals up to 15 digits", '{"a":21.5,"b":-0.5,"c":0.000001,"d":123456789.012345,"e":0.1}'],
    ["empty", "{}"],
  ])("taken: %s", (_, state) => {
    expect(reported(state)).toBe(state);
  });

  it.each([
    ["whitespace", '{ "temp":1}'],
    ["whitespace after a colon", '{"temp": 1}'],
    ["a trailing zero", '{"temp":1.50}'],
    ["an exponent", '{"temp":1e2}'],
    ["minus zero", '{"temp":-0}'],
    ["below 1e-6", '{"temp":0.0000001}'],
    ["more than 15 digits", '{"temp":0.1234567890123456}'],
    ["beyond 2^53", '{"temp":9007199254740993}'],
    ["a digit key (objects put them first)", '{"b":1,"2":2}'],
  ])("not taken: %s", (_, state) => {
    expect(reported(state)).toBeUndefined();
  });

  it("any object of scalars, as JSON.stringify writes it: reported exactly when it reads back as that text", () => {
    const scalar = fc.oneof(
      fc.integer(),
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.integer({ min: -1_000_000, max: 1_000_000 }).map((n) => n / 100),
      asciiText,
      fc.boolean(),
      fc.constant(null),
    );
    fc.assert(
      fc.property(fc.dictionary(key, scalar, { maxKeys: 8 }), (state) => {
        const whole = bytes(`{"thingName":"a","timestamp":1,"state":${JSON.stringify(state)}}`);
        stateTextChecked(decodeBytes(whole, position));
        // Reported whenever the fast path took the input and no number or key stands in the way.
        const plainNumbers = Object.values(state).every((v) => {
          if (typeof v !== "number" || Number.isSafeInteger(v)) return true;
          const digits = String(Math.abs(v));
          // A decimal (not exponent form) of at most 15 significant digits.
          return /^\d+\.\d+$/.test(digits) && digits.replace(".", "").replace(/^0+/, "").length <= 15;
        });
        const plainKeys = Object.keys(state).every((k) => !/^[0-9]+$/.test(k));
        const span = { start: -1, end: -1 };
        if (scanObservation(whole, span) !== undefined && plainNumbers && plainKeys) {
          expect(span.start).toBeGreaterThan(0);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it("the generators of the decode properties reached it", () => {
    expect(stateTexts.found).toBeGreaterThan(100);
  });
});

describe("the fast path declines what it does not read exactly", () => {
  const declined: [string, string][] = [
    ["an escape in a string", '{"thingName":"a\\"b","timestamp":1}'],
    ["an escape in a key", '{"thing\\u004eame":"a","timestamp":1}'],
    ["non-ASCII", '{"thingName":"æ","timestamp":1}'],
    ["a control character", '{"thingName":"a\tb","timestamp":1}'],
    ["nested", '{"thingName":"a","timestamp":1,"nested":[{"state":{}}]}'],
    ["an object in state", '{"thingName":"a","timestamp":1,"state":{"p":{"x":1}}}'],
    ["an array in state", '{"thingName":"a","timestamp":1,"state":{"p":[1]}}'],
    ["a duplicate key", '{"thingName":"a","thingName":"b","timestamp":1}'],
    ["a duplicate key in state", '{"thingName":"a","timestamp":1,"state":{"t":1,"t":2}}'],
    ["__proto__", '{"thingName":"a","timestamp":1,"state":{"__proto__":{}}}'],
    ["__proto__ with a scalar", '{"thingName":"a","timestamp":1,"state":{"__proto__":1}}'],
    ["a leading zero", '{"thingName":"a","timestamp":01}'],
    ["a bare fraction", '{"thingName":"a","timestamp":1.}'],
    ["truncated", '{"thingName":"a","timestamp":1'],
    ["trailing bytes", '{"thingName":"a","timestamp":1}x'],
    ["two objects", '{"thingName":"a"}{"thingName":"b"}'],
    ["an array", '[{"thingName":"a","timestamp":1}]'],
    ["a string", '"{}"'],
    ["a byte order mark", '\ufeff{"thingName":"a","timestamp":1}'],
    ["a trailing comma", '{"thingName":"a","timestamp":1,}'],
    ["a key too long to intern", `{"${"k".repeat(65)}":1}`],
    // More keys than the cache holds: the first is replaced before its duplicate comes.
    [
      "a duplicate key after many others",
      `{"k0":0,${Array.from({ length: 20_000 }, (_, i) => `"key-${(i * 7919) % 100_003}-${i}":${i},`).join("")}"k0":1}`,
    ],
  ];
  it.each(declined)("%s", (_, text) => {
    expect(scanObservation(bytes(text))).toBeUndefined();
    agrees(bytes(text));
  });

  it("numbers: JSON.parse's doubles, exactly (signs, exponents, beyond 2^53 and Clinger's range)", () => {
    const texts = ["-0", "-0.0", "0.1", "1e21", "1E5", "9007199254740993", "1e400", "5e-324", "0.1e-22", "1e23"];
    for (const t of texts) {
      const v = (scanObservation(bytes(`{"n":${t}}`)) as { n: number }).n;
      expect(Object.is(v, JSON.parse(t))).toBe(true);
    }
  });
});

describe("short string values come from a cache per key, always the input's text", () => {
  const state = (key: string, value: string): Uint8Array => bytes(`{"s":{${JSON.stringify(key)}:"${value}"}}`);
  const valueOf = (key: string, b: Uint8Array): unknown =>
    (scanObservation(b) as { s: Record<string, unknown> }).s[key];

  it("the same bytes give the same string; other bytes in the same slot give theirs", () => {
    const first = valueOf("vc1", state("vc1", "s12"));
    expect(first).toBe("s12");
    expect(valueOf("vc1", state("vc1", "s12"))).toBe(first);
    // Every two-letter value meets another in the key's 256 slots: each read after a replacement is the new text.
    const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    const values = Array.from({ length: 2_000 }, (_, i) => `v${letters[i % letters.length]}${i % 7}`);
    for (let round = 0; round < 3; round++) for (const v of values) expect(valueOf("vc1", state("vc1", v))).toBe(v);
  });

  it("values that differ in length only, or share a prefix, stay apart", () => {
    for (const v of ["a", "ab", "abc", "ab", "a", "", "abc", "abd"]) expect(valueOf("vc2", state("vc2", v))).toBe(v);
  });

  it("a key whose values are too varied stops caching and still reads every value", () => {
    for (let i = 0; i < 5_000; i++) expect(valueOf("vc3", state("vc3", `id-${i}`))).toBe(`id-${i}`);
    expect(valueOf("vc3", state("vc3", "s1"))).toBe("s1");
  });

  it("a value longer than the cached ones is read as it is", () => {
    const long = "59.12345,10.12345";
    expect(valueOf("vc4", state("vc4", long))).toBe(long);
    expect(valueOf("vc4", state("vc4", `${long}9`))).toBe(`${long}9`);
  });

  it("a cached value is not taken for different bytes when the input's memory is reused", () => {
    const b = state("vc5", "on");
    expect(valueOf("vc5", b)).toBe("on");
    b.set(bytes("no"), b.length - 5);
    expect(valueOf("vc5", b)).toBe("no");
  });

  it("random values of few keys, many colliding: JSON.parse's", () => {
    const shortText = fc.stringMatching(/^[a-c0-2]{0,4}$/);
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom("vc6", "vc7", "temp"), shortText), { minLength: 1, maxLength: 40 }),
        (members) => {
          for (const [k, v] of members) agrees(state(k, v));
          return true;
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe("an input that reads as its observation is the observation", () => {
  const text = '{"thingName":"t1","timestamp":5,"state":{"a":1},"extra":true}';

  it("from the bytes and from a JSON value, with the input's other members", () => {
    const fromBytes = decodeBytes(bytes(text), position);
    expect(fromBytes.observation).toBe(fromBytes.input);
    expect(fromBytes.observation).toMatchObject({ thingName: "t1", timestamp: 5, state: { a: 1 } });
    expect(fromBytes.observation?.nested).toBeUndefined();
    const value = JSON.parse(text) as unknown;
    expect(decodeValue(value, position).observation).toBe(value);
  });

  it("not when the decode gives it something of its own", () => {
    const made = [
      '{"thingName":"t1","timestamp":"2025-11-13T00:00:00Z","state":{}}',
      '{"thingName":"t1","timestamp":5}',
      '{"timestamp":5,"state":{}}',
      '{"thingName":"t1","timestamp":5,"state":{},"nested":[]}',
    ];
    for (const t of made) {
      const d = decodeBytes(bytes(t), position, { key: "k" });
      expect(d.observation).toBeDefined();
      expect(d.observation).not.toBe(d.input);
      expect(Object.keys(d.observation!)).toStrictEqual(["thingName", "timestamp", "state", "nested"]);
    }
  });

  it("not a device's: the bridge forwards its observations as JSON, without the input's other members", () => {
    const [d] = decodeDevicePayload("t1", bytes(text), position);
    expect(d!.observation).not.toBe(d!.input);
    expect(JSON.stringify(d!.observation)).toBe('{"thingName":"t1","timestamp":5,"state":{"a":1}}');
  });
});
