import { LRUCache } from "lru-cache";
import { RuleCompileError, compileScopeExpression, readPath, type ScopeExpression } from "../engine/index.js";

/** Thrown for a `${...}` that does not close, does not parse, or is not allowed. */
export class TemplateError extends Error {}

/** At most this many `${...}` in one string: with the per-expression budget, this bounds one rendering. */
export const TEMPLATE_MAX_VARIABLES = 100;

interface Expr {
  source: string;
  /** A plain dotted path (`thing.thingName`) is looked up and keeps its value as is. */
  path?: string[];
  /** Anything else is arithmetic, compiled by the rule-value whitelist (src/engine/compile/expression.ts). */
  compiled?: ScopeExpression;
}

type Part = string | Expr;

export type Scope = Record<string, unknown>;

const PATH = /^[A-Za-z_$][\w$]*(\.[\w$-]+)*$/;

/**
 * A string with `${...}` variables, parsed once. Rendering looks each
 * variable up in the scope; an unknown one renders as the empty string and
 * is reported through `onUnknown` so the caller can log it.
 */
export class Template {
  /** What this template holds, estimated: its text and the functions of its expressions. */
  readonly bytes: number;

  constructor(private readonly parts: readonly Part[]) {
    this.bytes = parts.reduce(
      (sum, p) => sum + (typeof p === "string" ? 2 * p.length : (p.compiled?.bytes ?? 0) + 2 * p.source.length),
      64,
    );
  }

  get isConstant(): boolean {
    return this.parts.every((p) => typeof p === "string");
  }

  /** The variables' sources, for validation messages and the loop check. */
  variables(): string[] {
    return this.parts.filter((p): p is Expr => typeof p !== "string").map((p) => p.source);
  }

  /**
   * A template that is exactly one `${...}` keeps the value's type (a number
   * stays a number, for SET_RESOURCE); otherwise the parts are joined as text.
   */
  render(scope: Scope, onUnknown: (variable: string) => void): unknown {
    if (this.parts.length === 1 && typeof this.parts[0] !== "string") {
      const value = evaluate(this.parts[0]!, scope);
      if (value === undefined) onUnknown(this.parts[0]!.source);
      return value ?? "";
    }
    let out = "";
    for (const part of this.parts) {
      if (typeof part === "string") {
        out += part;
        continue;
      }
      const value = evaluate(part, scope);
      if (value === undefined) onUnknown(part.source);
      out += text(value);
    }
    return out;
  }
}

function evaluate(expr: Expr, scope: Scope): unknown {
  if (expr.path) return readPath(scope, expr.path);
  const { compiled } = expr;
  // A name the payload lacks makes the whole variable unknown (not NaN or a half result).
  if (compiled!.names.some((name) => readPath(scope, name) === undefined)) return undefined;
  const value = compiled!.evaluate(scope);
  // NaN: arithmetic over something that is not a number, which has no value to show.
  return value === null || value === undefined || Number.isNaN(value) ? undefined : value;
}

function text(value: unknown): string {
  if (value === undefined || value === null) return "";
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

/** Parses `text`; throws TemplateError naming the bad variable. */
export function parseTemplate(source: string): Template {
  const parts: Part[] = [];
  let at = 0;
  let variables = 0;
  while (at < source.length) {
    const open = source.indexOf("${", at);
    if (open < 0) {
      parts.push(source.slice(at));
      break;
    }
    if (open > at) parts.push(source.slice(at, open));
    const close = matchingBrace(source, open + 2);
    if (close < 0) throw new TemplateError(`unclosed \${ at position ${open}`);
    if (++variables > TEMPLATE_MAX_VARIABLES) {
      throw new TemplateError(`more than ${TEMPLATE_MAX_VARIABLES} \${...} variables`);
    }
    parts.push(compileExpr(source.slice(open + 2, close).trim()));
    at = close + 1;
  }
  return new Template(parts);
}

function matchingBrace(source: string, from: number): number {
  let depth = 0;
  for (let i = from; i < source.length; i++) {
    const ch = source[i];
    if (ch === "{") depth++;
    else if (ch === "}") {
      if (depth === 0) return i;
      depth--;
    }
  }
  return -1;
}

function compileExpr(source: string): Expr {
  if (source === "") throw new TemplateError("empty ${}");
  if (PATH.test(source)) return { source, path: source.split(".") };
  try {
    return { source, compiled: compileScopeExpression(source, source) };
  } catch (e) {
    if (e instanceof RuleCompileError) throw new TemplateError(e.reason);
    throw e;
  }
}

/** Parsed templates kept, by count and by estimated bytes, key included (docs/engine.md, "Caches"). */
export const TEMPLATE_CACHE_MAX = 5_000;
export const TEMPLATE_CACHE_MAX_BYTES = 16 * 1024 * 1024;

const cache = new LRUCache<string, Template>({
  max: TEMPLATE_CACHE_MAX,
  maxSize: TEMPLATE_CACHE_MAX_BYTES,
  sizeCalculation: (t, source) => t.bytes + 2 * source.length,
});

/** parseTemplate with a cache: action configs repeat the same strings for every delivery. */
export function template(source: string): Template {
  let t = cache.get(source);
  if (!t) {
    t = parseTemplate(source);
    cache.set(source, t);
  }
  return t;
}

/** How many parsed templates are cached now, and their estimated bytes (for the bounded-memory test). */
export function templateCacheSize(): { entries: number; bytes: number } {
  return { entries: cache.size, bytes: cache.calculatedSize };
}

/** Every string in `value` (deeply) rendered against `scope`. */
export function substitute<T>(value: T, scope: Scope, onUnknown: (variable: string) => void): T {
  return deep(value, scope, onUnknown) as T;
}

function deep(value: unknown, scope: Scope, onUnknown: (variable: string) => void): unknown {
  if (typeof value === "string") return value.includes("${") ? template(value).render(scope, onUnknown) : value;
  if (Array.isArray(value)) return value.map((v) => deep(v, scope, onUnknown));
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = deep(v, scope, onUnknown);
    return out;
  }
  return value;
}

/** Every string in `value` (deeply) with its path, for validation. */
export function* strings(value: unknown, path: string[] = []): Generator<[string[], string]> {
  if (typeof value === "string") yield [path, value];
  else if (Array.isArray(value)) for (const [i, v] of value.entries()) yield* strings(v, [...path, String(i)]);
  else if (value !== null && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) yield* strings(v, [...path, k]);
  }
}
