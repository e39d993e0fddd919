import type { MiddlewareHandler } from "hono";
import { ApiError } from "../errors/index.js";
import type { ApiEnv } from "./context.js";

/**
 * Nesting allowed in a JSON request body: Jackson's default
 * (`StreamReadConstraints.maxNestingDepth`, the parser Elasticsearch uses).
 * Deeper bodies only serve to overflow the stack of recursive code.
 */
export const MAX_JSON_DEPTH = 1000;
/**
 * Objects and arrays allowed in one JSON request body: twenty per observation of
 * the largest ingest batch (10,000). `JSON.parse` of a 4 MiB body of empty
 * objects or nested arrays (1.3-2 million of them) held the event loop for 2-9 s
 * on the shared 2-core box; this bounds a body's parse to a small fraction of that.
 */
export const MAX_JSON_CONTAINERS = 200_000;

const JSON_TYPE = /^application\/([a-z-.]+\+)?json\b/i;

/**
 * Refuses, before `JSON.parse` runs, a JSON body too deep or with too many
 * objects and arrays: one linear scan of the text the validators then parse
 * (Hono keeps it). The error names the top-level property that holds the
 * offending part, as every other error of a request body does.
 */
export function jsonShapeGuard(): MiddlewareHandler<ApiEnv> {
  return async (c, next) => {
    const type = c.req.header("content-type");
    if (c.req.path.startsWith("/storage/") || type === undefined || !JSON_TYPE.test(type)) return next();
    if (c.req.method === "GET" || c.req.method === "HEAD") return next();
    const problem = jsonShapeProblem(await c.req.text());
    if (problem)
      throw new ApiError(
        "INVALID_ARGUMENTS",
        `Property ${problem.property} is invalid: ${problem.why}`,
        problem.property,
      );
    return next();
  };
}

export interface JsonShapeProblem {
  property: string;
  why: string;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;

/** Depth and container count of a JSON text, without building it; malformed text is left to `JSON.parse`. */
export function jsonShapeProblem(
  text: string,
  limits: { depth: number; containers: number } = { depth: MAX_JSON_DEPTH, containers: MAX_JSON_CONTAINERS },
): JsonShapeProblem | undefined {
  let depth = 0;
  let containers = 0;
  let inString = false;
  let stringStart = 0;
  // The last string seen directly inside a top-level object: the key of what follows it.
  let topKey: string | undefined;
  let topIsObject = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (inString) {
      if (ch === BACKSLASH) i++;
      else if (ch === QUOTE) {
        inString = false;
        if (depth === 1 && topIsObject) topKey = text.slice(stringStart, i + 1);
      }
      continue;
    }
    if (ch === QUOTE) {
      inString = true;
      stringStart = i;
    } else if (ch === OPEN_OBJECT || ch === OPEN_ARRAY) {
      if (depth === 0) topIsObject = ch === OPEN_OBJECT;
      depth++;
      containers++;
      if (depth > limits.depth) return problemAt(topKey, `nested deeper than ${limits.depth} levels`);
      if (containers > limits.containers) {
        return problemAt(topKey, `holds more than ${limits.containers} objects and arrays`);
      }
    } else if (ch === CLOSE_OBJECT || ch === CLOSE_ARRAY) {
      depth--;
    }
  }
  return undefined;
}

function problemAt(quotedKey: string | undefined, why: string): JsonShapeProblem {
  let property = "body";
  if (quotedKey !== undefined) {
    try {
      property = JSON.parse(quotedKey) as string;
    } catch {
      // A key JSON.parse refuses makes the whole body invalid anyway.
    }
  }
  return { property, why };
}
