import fc from "fast-check";
import type { OpenApiDocument, Schema } from "./support.js";

/**
 * Hostile values for property-based tests: what an attacker or a broken
 * client sends in place of what a schema asks for.
 */

/** JSON text placed as is into a body, for shapes JSON.stringify cannot build (a million levels deep). */
export class RawJson {
  constructor(
    readonly text: string,
    readonly label: string,
  ) {}
}

const RAW_MARK = "\u0000raw\u0000";

/** JSON.stringify that splices in RawJson texts. */
export function toJson(value: unknown): string {
  const raws: RawJson[] = [];
  const text = JSON.stringify(value, (_k, v: unknown) => {
    if (v instanceof RawJson) {
      raws.push(v);
      return `${RAW_MARK}${raws.length - 1}`;
    }
    return v;
  });
  if (raws.length === 0) return text;
  // JSON.stringify writes the mark's NUL as \u0000.
  return text.replace(/"\\u0000raw\\u0000(\d+)"/g, (_m, i: string) => raws[Number(i)]!.text);
}

/** A short description of a value for failure messages (bodies may be megabytes). */
export function describe(value: unknown, max = 300): string {
  if (value instanceof RawJson) return `<${value.label}>`;
  let text: string;
  try {
    text = JSON.stringify(value, (_k, v: unknown) => {
      if (v instanceof RawJson) return `<${v.label}>`;
      if (typeof v === "string" && v.length > 80) return `<string of ${v.length}: ${JSON.stringify(v.slice(0, 20))}…>`;
      if (Array.isArray(v) && v.length > 20) return `<array of ${v.length}>`;
      return v;
    });
  } catch (err) {
    text = `<unprintable: ${(err as Error).message}>`;
  }
  return text === undefined ? "undefined" : text.length > max ? `${text.slice(0, max)}…` : text;
}

export const ODD_STRINGS = [
  "",
  " ",
  "\u0000",
  "a\u0000b",
  "\ud800",
  "\udfff",
  "x\ud83d",
  "\u202eevil\u202c",
  "\u200f\u200e",
  "👩‍👩‍👧‍👦",
  "e\u0301\u0301\u0301",
  "\ufeff",
  "\uffff",
  "NaN",
  "Infinity",
  "-Infinity",
  "-0",
  "1e308",
  "1e-400",
  "0x10",
  "00000001",
  "true",
  "null",
  "undefined",
  "[]",
  "{}",
  "__proto__",
  "constructor",
  "prototype",
  "../../../etc/passwd",
  "..",
  "/",
  "a/../b",
  "%00",
  "%",
  "%zz",
  "${1+1}",
  "${thing.thingName}",
  "*",
  "?",
  "(a+)+b",
  "[",
  "\\",
  "'; DROP TABLE rules; --",
  "<script>alert(1)</script>",
  "\r\nX-Injected: 1",
  "cron(0 0 * * ? *)",
  "2026-13-45T99:99:99Z",
  "0000-00-00T00:00:00.000Z",
  "275760-09-13T00:00:00.001Z",
];

export const ODD_NUMBERS = [0, -0, -1, 1.5, 1e308, -1e308, 5e-324, 2 ** 53 + 1, -(2 ** 63), 4294967296, 1e21];

const surrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c));

export const hostileString: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...ODD_STRINGS) },
  { weight: 2, arbitrary: fc.string({ unit: "binary", maxLength: 24 }) },
  { weight: 1, arbitrary: fc.string({ unit: surrogate, minLength: 1, maxLength: 4 }) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.integer({ min: 2_000, max: 50_000 }), fc.constantFrom("a", "é", "😀", "\u0000"))
      .map(([n, c]) => c.repeat(n)),
  },
);

const nest = (depth: number, open: string, close: string, leaf: string): RawJson =>
  new RawJson(open.repeat(depth) + leaf + close.repeat(depth), `${depth} levels of ${open}`);

/** Deep nesting, up to far beyond what any recursive code survives. */
export const deepValue: fc.Arbitrary<RawJson> = fc
  .tuple(fc.constantFrom(64, 999, 1_001, 3_000, 30_000), fc.boolean())
  .map(([depth, array]) => (array ? nest(depth, "[", "]", "1") : nest(depth, '{"a":', "}", "1")));

export const hostileScalar: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom<unknown>(null, true, false, ...ODD_NUMBERS),
  hostileString,
);

export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 6, arbitrary: hostileScalar },
  { weight: 1, arbitrary: deepValue },
  {
    weight: 1,
    arbitrary: fc
      .array(fc.oneof(hostileScalar, fc.constant([]), fc.constant({})), { maxLength: 6 })
      .map((a) => a as unknown),
  },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.integer({ min: 1_000, max: 20_000 }), fc.constantFrom<unknown>(0, null, "x", {}, []))
      .map(([n, item]) => new Array<unknown>(n).fill(item)),
  },
  {
    weight: 1,
    arbitrary: fc.constant(JSON.parse('{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}}}')),
  },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
);

/** Whole bodies that are not JSON of any shape, or JSON of the wrong kind. */
export interface RawBody {
  raw: Buffer | string;
  contentType?: string;
  label: string;
}

export const rawBodies: fc.Arbitrary<RawBody> = fc.constantFrom<RawBody>(
  { raw: "", contentType: "application/json", label: "empty" },
  { raw: "{", contentType: "application/json", label: "truncated JSON" },
  { raw: "not json", contentType: "application/json", label: "text" },
  { raw: '{"a":1}', contentType: "text/plain", label: "JSON as text/plain" },
  { raw: '{"a":1}', contentType: undefined, label: "no content type" },
  {
    raw: Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0xc3, 0x22, 0x7d]),
    contentType: "application/json",
    label: "bad UTF-8",
  },
  { raw: "\ufeff{}", contentType: "application/json", label: "BOM" },
  { raw: "[1,2,]", contentType: "application/json", label: "trailing comma" },
  { raw: '{"a":1,"a":2}', contentType: "application/json", label: "duplicate key" },
  { raw: "1e999999", contentType: "application/json", label: "huge exponent" },
  { raw: "-0", contentType: "application/json", label: "-0" },
  { raw: '"\\ud800"', contentType: "application/json", label: "lone surrogate string" },
  { raw: "null", contentType: "application/json", label: "null" },
  { raw: '{"a":1}', contentType: "application/json; charset=utf-16", label: "declared UTF-16" },
  { raw: "<xml/>", contentType: "application/xml", label: "XML" },
);

/** Real names and ids of the running service, so that generated requests reach past "not found". */
export interface Pool {
  strings: string[];
}

/**
 * Values that satisfy `schema` as far as it says (types, enums, lengths and
 * ranges), with strings drawn from the pool of real ids half of the time.
 */
export function validOf(
  schema: Schema | undefined,
  doc: OpenApiDocument,
  pool: Pool,
  depth = 0,
): fc.Arbitrary<unknown> {
  if (!schema) return fc.jsonValue({ maxDepth: 2 });
  if (schema.$ref) {
    const name = schema.$ref.replace("#/components/schemas/", "");
    return depth > 8 ? fc.constant({}) : validOf(doc.components?.schemas?.[name], doc, pool, depth + 1);
  }
  const choices = schema.anyOf ?? schema.oneOf;
  if (choices?.length) return fc.oneof(...choices.map((s) => validOf(s, doc, pool, depth + 1)));
  if (schema.allOf?.length) return validOf(schema.allOf[0], doc, pool, depth + 1);
  if (schema.enum?.length) return fc.constantFrom(...schema.enum);
  const base = ((): fc.Arbitrary<unknown> => {
    switch (schema.type) {
      case "string":
        return stringOf(schema, pool);
      case "integer": {
        // Around the bounds the schema gives; an open side reaches 1,000 past the other.
        const min = Math.max(schema.minimum ?? Math.min(-1000, (schema.maximum ?? 0) - 1000), -1e9);
        return fc.integer({ min, max: Math.min(schema.maximum ?? Math.max(1000, min + 1000), 1e9) });
      }
      case "number": {
        const min = schema.minimum ?? Math.min(-1000, (schema.maximum ?? 0) - 1000);
        return fc.double({ min, max: schema.maximum ?? Math.max(1000, min + 1000), noNaN: true });
      }
      case "boolean":
        return fc.boolean();
      case "array":
        return fc.array(validOf(schema.items, doc, pool, depth + 1), {
          minLength: Math.min(schema.minItems ?? 0, 3),
          maxLength: Math.max(Math.min(schema.maxItems ?? 3, 3), Math.min(schema.minItems ?? 0, 3)),
        });
      case "object":
      case undefined: {
        if (!schema.properties && schema.type === undefined) return fc.jsonValue({ maxDepth: 2 });
        const props = schema.properties ?? {};
        const required = new Set(schema.required ?? []);
        const model: Record<string, fc.Arbitrary<unknown>> = {};
        for (const [k, s] of Object.entries(props)) model[k] = validOf(s, doc, pool, depth + 1);
        const record = fc.record(model, { requiredKeys: Object.keys(props).filter((k) => required.has(k)) });
        if (schema.additionalProperties && typeof schema.additionalProperties === "object" && !schema.properties) {
          return fc.dictionary(stringOf({}, pool), validOf(schema.additionalProperties, doc, pool, depth + 1), {
            maxKeys: 3,
          });
        }
        return record;
      }
      default:
        return fc.jsonValue({ maxDepth: 2 });
    }
  })();
  return schema.nullable ? fc.option(base, { nil: null }) : base;
}

function stringOf(schema: Schema, pool: Pool): fc.Arbitrary<string> {
  const own = ((): fc.Arbitrary<string> => {
    if (schema.format === "uuid") return fc.uuid({ version: 4 });
    if (schema.format === "email") return fc.emailAddress();
    if (schema.format === "date-time") return fc.date({ noInvalidDate: true }).map((d) => d.toISOString());
    if (schema.pattern) {
      try {
        return fc.stringMatching(new RegExp(schema.pattern)).filter((s) => s.length <= (schema.maxLength ?? 64));
      } catch {
        // A pattern JavaScript cannot compile: plain strings then.
      }
    }
    // Short strings, but as long as the schema asks at least (a device secret's 20 characters).
    const minLength = schema.minLength ?? 0;
    return fc.string({ minLength, maxLength: Math.min(schema.maxLength ?? 16, Math.max(16, minLength)) });
  })();
  return pool.strings.length > 0 ? fc.oneof(own, fc.constantFrom(...pool.strings)) : own;
}

/** Every path into a JSON value (object keys and array indexes), at most `max` of them. */
function pathsOf(value: unknown, max = 200): (string | number)[][] {
  const out: (string | number)[][] = [[]];
  const walk = (v: unknown, path: (string | number)[]): void => {
    if (out.length >= max || v === null || typeof v !== "object" || v instanceof RawJson) return;
    const entries: [string | number, unknown][] = Array.isArray(v)
      ? v.slice(0, 20).map((x, i) => [i, x])
      : Object.entries(v as Record<string, unknown>);
    for (const [k, x] of entries) {
      out.push([...path, k]);
      walk(x, [...path, k]);
    }
  };
  walk(value, []);
  return out;
}

function setAt(value: unknown, path: (string | number)[], replacement: unknown, insert: boolean): unknown {
  if (path.length === 0) return replacement;
  const copy: unknown = Array.isArray(value) ? [...value] : { ...(value as Record<string, unknown>) };
  let node = copy as Record<string | number, unknown>;
  for (let i = 0; i < path.length - 1; i++) {
    const k = path[i]!;
    const child = node[k];
    const next = Array.isArray(child) ? [...child] : { ...(child as Record<string, unknown>) };
    node[k] = next;
    node = next as Record<string | number, unknown>;
  }
  const last = path[path.length - 1]!;
  if (insert && Array.isArray(node)) node.splice(Number(last), 0, replacement);
  else if (insert) node[`${String(last)}_extra`] = replacement;
  else node[last] = replacement;
  return copy;
}

/** `value` with one place in it (possibly the whole) replaced by, or joined by, a hostile value. */
export function mutated(seeds: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> {
  return seeds.chain((seed) =>
    fc
      .tuple(fc.constantFrom(...pathsOf(seed)), hostileValue, fc.boolean())
      .map(([path, bad, insert]) => setAt(seed, path, bad, insert)),
  );
}
