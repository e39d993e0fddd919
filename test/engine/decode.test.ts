import { describe, expect, it } from "vitest";
import { JsonDecoder } from "../../src/engine/decode.js";
import { rng } from "../../bench/engine/workload.js";

/** The decoder must give exactly what JSON.parse gives, value or error, for any bytes. */
function same(decoder: JsonDecoder, text: string): void {
  const bytes = Buffer.from(text, "utf8");
  let expected: unknown;
  let expectedError: string | undefined;
  try {
    expected = JSON.parse(text);
  } catch (err) {
    expectedError = (err as Error).name;
  }
  if (expectedError !== undefined) {
    expect(() => decoder.decode(bytes), text).toThrow(SyntaxError);
    return;
  }
  const actual = decoder.decode(bytes);
  expect(actual, text).toStrictEqual(expected);
  // -0 and 0 are equal to toStrictEqual's eye only through Object.is; check numbers exactly.
  if (typeof expected === "number") expect(Object.is(actual, expected), text).toBe(true);
}

describe("JsonDecoder", () => {
  const decoder = new JsonDecoder();

  it("decodes an observation like JSON.parse, sharing repeated short strings", () => {
    const text =
      '{"thingName":"t1","timestamp":1763000000000,"state":{"temp":21.5,"status":"ok","latlng":"59.9,10.7"}}';
    same(decoder, text);
    const a = decoder.decode(Buffer.from(text)) as { state: { status: string } };
    const b = decoder.decode(Buffer.from(text)) as { state: { status: string } };
    expect(a).not.toBe(b);
    expect(a.state).not.toBe(b.state);
    expect(b.state.status).toBe("ok");
  });

  it.each([
    // numbers on both sides of the fast path
    "0",
    "-0",
    "7",
    "-7",
    "123456789012345",
    "1234567890123456",
    "12345678901234567890",
    "0.1",
    "-0.25",
    "1.5e3",
    "1E-7",
    "2e+2",
    "0.30000000000000004",
    "9007199254740993",
    "1.000000000000001",
    "3.14159265358979",
    "123.456789012345",
    "1.7976931348623157e308",
    "5e-324",
    "0.000001",
    "100.0",
    // not numbers JSON accepts
    "01",
    "-",
    "1.",
    ".5",
    "+1",
    "1.e5",
    "--1",
    "0x10",
    "1e",
    "Infinity",
    "NaN",
    "-01.5",
    // strings
    '""',
    '"plain"',
    '"with \\"escape\\""',
    '"tab\\t"',
    '"\\u00e9"',
    '"é"',
    '"日本"',
    '"a\u007fb"',
    '"unterminated',
    '"ctrl\u0001"',
    `"${"x".repeat(32)}"`,
    `"${"y".repeat(33)}"`,
    '"emoji 😀"',
    // literals and structure
    "true",
    "false",
    "null",
    "tru",
    "nul",
    "[]",
    "{}",
    "[1,2,3]",
    "[1,]",
    "[,1]",
    '{"a":1,}',
    '{"a" 1}',
    "{a:1}",
    '{"a":1,"a":2}',
    '{"__proto__":{"x":1}}',
    '{"constructor":1}',
    '{"2":"b","1":"a","x":0}',
    ' \n\t\r{ "a" : [ 1 , { } ] } ',
    "",
    " ",
    "{} {}",
    "[1] x",
    '{"a":{"b":{"c":[null,true,false,-1.5,"s"]}}}',
    "\ufeff{}",
    "[".repeat(70) + "]".repeat(70),
  ])("case %#: %s", (text) => same(decoder, text));

  it("leaves absurd nesting to JSON.parse", () => {
    const deep = "[".repeat(5000) + "]".repeat(5000);
    let v = decoder.decode(Buffer.from(deep));
    let depth = 0;
    for (; Array.isArray(v) && v.length > 0; depth++) v = v[0] as unknown;
    expect(depth).toBe(4999);
  });

  it("agrees with JSON.parse on random documents and their corruptions", () => {
    const r = rng(7);
    const words = ["a", "temp", "status", "latlng", "ok", "ALARM", "x y", "ünï", 'q"t', "back\\slash", ""];
    const gen = (depth: number): unknown => {
      const k = Math.floor(r() * (depth > 3 ? 4 : 6));
      if (k === 0) return Math.floor((r() - 0.5) * 1e6) / 10 ** Math.floor(r() * 8);
      if (k === 1) return words[Math.floor(r() * words.length)];
      if (k === 2) return [true, false, null][Math.floor(r() * 3)];
      if (k === 3) return (r() - 0.5) * 10 ** Math.floor(r() * 40 - 20);
      if (k === 4) return Array.from({ length: Math.floor(r() * 4) }, () => gen(depth + 1));
      const o: Record<string, unknown> = {};
      for (let i = Math.floor(r() * 5); i > 0; i--) o[words[Math.floor(r() * words.length)]!] = gen(depth + 1);
      return o;
    };
    for (let i = 0; i < 3000; i++) {
      const text = JSON.stringify(gen(0));
      same(decoder, text);
      // A corrupted copy: one byte changed, or cut short.
      const at = Math.floor(r() * text.length);
      same(decoder, text.slice(0, at) + '{}[]:,"0-.e '.charAt(Math.floor(r() * 12)) + text.slice(at + 1));
      same(decoder, text.slice(0, at));
    }
  });
});
