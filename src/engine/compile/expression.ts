import { LRUCache } from "lru-cache";
import { compile as mathCompile, parse, type MathNode } from "mathjs";
import type { NestedObservation } from "../types.js";
import { nestedValue, splitResource, type EvalContext } from "./context.js";
import { RuleCompileError } from "./errors.js";

/** A `${...}` value, compiled once; evaluating it reads the context and allocates nothing. */
export type ValueFn = (ctx: EvalContext) => unknown;

/**
 * `jit` turns the mathjs AST into a JavaScript function (the default);
 * `mathjs` evaluates the mathjs-compiled expression with a scope per call
 * (kept to measure the difference, see bench/engine).
 */
export type ExpressionMode = "jit" | "mathjs";

const TEMPLATE = /\$\{([^}]*)\}/g;
const WHOLE = /^\s*\$\{([^}]*)\}\s*$/;

export function isExpression(value: unknown): value is string {
  return typeof value === "string" && value.includes("${");
}

/**
 * Compiles a rule value holding `${...}`. A value that is one `${expr}` gives
 * the expression's value (a number from arithmetic, or the raw value of a
 * plain reference); text around `${...}` gives a string.
 */
export function compileValueExpression(value: string, property: string, mode: ExpressionMode = "jit"): ValueFn {
  const whole = WHOLE.exec(value);
  if (whole) return compileOne(whole[1]!, property, mode);
  const parts: (string | ValueFn)[] = [];
  let last = 0;
  for (const m of value.matchAll(TEMPLATE)) {
    if (m.index > last) parts.push(value.slice(last, m.index));
    parts.push(compileOne(m[1]!, property, mode));
    last = m.index + m[0].length;
  }
  if (last < value.length) parts.push(value.slice(last));
  return (ctx) => {
    let s = "";
    for (const p of parts) s += typeof p === "string" ? p : String(p(ctx) ?? "");
    return s;
  };
}

const FUNCTIONS = new Set([
  "abs",
  "ceil",
  "floor",
  "round",
  "sqrt",
  "cbrt",
  "min",
  "max",
  "pow",
  "exp",
  "log",
  "log10",
  "log2",
  "sign",
  "sin",
  "cos",
  "tan",
  "atan2",
]);
const BINARY: Record<string, string> = {
  add: "+",
  subtract: "-",
  multiply: "*",
  divide: "/",
  mod: "%",
  larger: ">",
  largerEq: ">=",
  smaller: "<",
  smallerEq: "<=",
  equal: "===",
  unequal: "!==",
  and: "&&",
  or: "||",
};

/** Reads the numeric value of a resource: anything else is NaN, so arithmetic never concatenates strings. */
const num = (v: unknown): number => (typeof v === "number" ? v : NaN);

interface Ref {
  scope: "thing" | "observation";
  resource: string;
}

/**
 * The budget of one `${...}`: its text and its syntax tree are bounded, and
 * the whitelist has no loops, ranges, matrices or user functions, so one
 * evaluation runs at most EXPRESSION_MAX_NODES operations: no expression can
 * hold the event loop, whatever it holds.
 */
export const EXPRESSION_MAX_LENGTH = 1000;
export const EXPRESSION_MAX_NODES = 200;

/**
 * How an expression reads a dotted name: the JavaScript that reads it from
 * `ctx`, or a RuleCompileError for a name the reader does not offer.
 */
type NameReader = (path: readonly string[], property: string) => string;

function parseChecked(
  source: string,
  property: string,
  names: NameReader = ruleNames,
): { root: MathNode; code: string } {
  if (source.length > EXPRESSION_MAX_LENGTH) {
    throw new RuleCompileError(property, `\${...} is longer than ${EXPRESSION_MAX_LENGTH} characters`);
  }
  let root: MathNode;
  try {
    root = parse(source);
  } catch (err) {
    throw new RuleCompileError(property, `cannot parse \${${source}}: ${(err as Error).message}`);
  }
  // Restriction first, whatever the mode: only arithmetic over references, constants and plain functions.
  const budget = { nodes: EXPRESSION_MAX_NODES };
  return { root, code: generate(root, { property, names, budget }, true) };
}

const JS_COMPARISON: Record<string, string> = { gt: ">", gte: ">=", lt: "<", lte: "<=", eq: "===", ne: "!==" };

/**
 * `<resource> <op> ${expr}` on one of the thing's own resources, as ONE
 * generated function: reading the resource, the arithmetic and the comparison
 * inline, instead of three closure calls per test (the scan's hot path).
 * Same semantics as comparing with the value of `compileValueExpression`:
 * numbers with numbers (NaN matches nothing), strings with strings.
 * Undefined when the value is not a single `${...}` (the closures handle it).
 */
export function compileComparison(
  value: string,
  property: string,
  op: string,
  resource: string,
  mode: ExpressionMode = "jit",
): ((ctx: EvalContext) => boolean) | undefined {
  const whole = WHOLE.exec(value);
  const js = JS_COMPARISON[op];
  if (!whole || mode !== "jit" || js === undefined) return undefined;
  const { code } = parseChecked(whole[1]!, property);
  const body = `return function test(ctx) {
    const v = ctx.os[${JSON.stringify(resource)}];
    const r = ${code};
    if (typeof v === "number") { if (typeof r !== "number" || r !== r) return false; }
    else if (typeof v !== "string" || typeof r !== "string") return false;
    return v ${js} r;
  };`;
  return generated<EvalContext>(body) as (ctx: EvalContext) => boolean;
}

/** At most this many generated functions are kept for sharing (docs/engine.md, "Caches"). */
export const GENERATED_CACHE_MAX = 10_000;
/** And at most this many bytes of them, as generatedCodeBytes estimates them. */
export const GENERATED_CACHE_MAX_BYTES = 32 * 1024 * 1024;

/**
 * What a function generated from `text` holds on the V8 heap (its source,
 * bytecode, closure and this cache's key), estimated from the text's length:
 * measured at 2-20 KB per function, for one term to thirty.
 */
export function generatedCodeBytes(text: string): number {
  return 1024 + 16 * text.length;
}

/**
 * Generated functions by their text: identical conditions (the same check in
 * many thing types' rules) share one function, so V8 compiles, optimises and
 * caches its code once instead of once per rule. They read only `ctx`, so
 * sharing is safe. Least recently used texts are evicted, by count and by
 * estimated bytes (a long expression costs more): a compiled rule keeps its
 * own functions alive, so eviction only ends sharing, and the dry run's
 * stream of distinct expressions cannot grow the process.
 */
const GENERATED = new LRUCache<string, (ctx: never) => unknown>({
  max: GENERATED_CACHE_MAX,
  maxSize: GENERATED_CACHE_MAX_BYTES,
  sizeCalculation: (_fn, text) => generatedCodeBytes(text),
});

/** How many generated functions are cached now, and their estimated bytes (for the bounded-memory test). */
export function generatedCacheSize(): { entries: number; bytes: number } {
  return { entries: GENERATED.size, bytes: GENERATED.calculatedSize };
}

function generated<C>(body: string): (ctx: C) => unknown {
  return generatedFunction<(ctx: C) => unknown>(body);
}

/**
 * The function `body` returns, made once per distinct text (see GENERATED): for code generated
 * from rules, which must hold nothing but quoted names, numbers and fixed code.
 */
export function generatedFunction<F>(body: string): F {
  let fn = GENERATED.get(body);
  if (fn === undefined) {
    const factory = new Function("num", "nested", "at", body) as (
      n: typeof num,
      nv: typeof nestedValue,
      a: typeof readPath,
    ) => (ctx: never) => unknown;
    fn = factory(num, nestedValue, readPath);
    GENERATED.set(body, fn);
  }
  return fn as F;
}

/** The value at a dotted path of `scope`, reading own properties only; undefined when absent. */
export function readPath(scope: unknown, path: readonly string[]): unknown {
  let value = scope;
  for (const key of path) {
    if (value === null || typeof value !== "object" || !Object.hasOwn(value, key)) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

/** A `${...}` of an action template, compiled by the same whitelist as rule values. */
export interface ScopeExpression {
  /** The value over the payload scope; NaN where an operand is not a number. */
  evaluate: (scope: object) => unknown;
  /** Every dotted name it reads, so the caller can tell an unknown variable from a result. */
  names: readonly (readonly string[])[];
  /** What its generated function holds, estimated (generatedCodeBytes): for caches that keep it. */
  bytes: number;
}

/**
 * Compiles one `${...}` of an action template. The names it may read are any
 * dotted path of the payload scope (`observation.temp`, `thing.state.level`,
 * `timestamp`); everything else is the rule-value whitelist and budget.
 */
export function compileScopeExpression(source: string, property: string): ScopeExpression {
  const names: string[][] = [];
  const collect: NameReader = (path) => {
    names.push([...path]);
    return `at(ctx, ${JSON.stringify(path)})`;
  };
  const { code } = parseChecked(source, property, collect);
  const text = `return function value(ctx) { return ${code}; };`;
  return { evaluate: generated<object>(text), names, bytes: generatedCodeBytes(text) };
}

function compileOne(source: string, property: string, mode: ExpressionMode): ValueFn {
  const { root, code } = parseChecked(source, property);
  if (mode === "mathjs") return viaMathjs(root, source);
  // The generated text holds only operators, numbers, quoted names and Math.* calls (see generate).
  return generated<EvalContext>(`return function value(ctx) { return ${code}; };`);
}

interface Generation {
  property: string;
  names: NameReader;
  /** Syntax nodes still allowed. */
  budget: { nodes: number };
}

function generate(node: MathNode, g: Generation, top: boolean): string {
  const { property } = g;
  const bad = (why: string): never => {
    throw new RuleCompileError(property, why);
  };
  if (--g.budget.nodes < 0) bad(`\${...} has more than ${EXPRESSION_MAX_NODES} terms`);
  switch (node.type) {
    case "ConstantNode": {
      const v = (node as unknown as { value: unknown }).value;
      if (typeof v === "number" || typeof v === "string" || typeof v === "boolean") return JSON.stringify(v);
      return bad("unsupported constant");
    }
    case "ParenthesisNode":
      return `(${generate((node as unknown as { content: MathNode }).content, g, top)})`;
    case "SymbolNode":
    case "AccessorNode": {
      const read = g.names(pathOf(node, property), property);
      return top ? read : `num(${read})`;
    }
    case "OperatorNode": {
      const op = node as unknown as { fn: string; args: MathNode[] };
      const args = op.args.map((a) => generate(a, g, false));
      if (op.fn === "unaryMinus") return `(-${args[0]})`;
      if (op.fn === "unaryPlus") return `(+${args[0]})`;
      if (op.fn === "not") return `(!${args[0]})`;
      if (op.fn === "pow") return `Math.pow(${args[0]}, ${args[1]})`;
      const js = BINARY[op.fn];
      if (!js || args.length !== 2) return bad(`operator ${op.fn} is not allowed`);
      return `(${args[0]} ${js} ${args[1]})`;
    }
    case "ConditionalNode": {
      const c = node as unknown as { condition: MathNode; trueExpr: MathNode; falseExpr: MathNode };
      return `(${generate(c.condition, g, false)} ? ${generate(c.trueExpr, g, false)} : ${generate(c.falseExpr, g, false)})`;
    }
    case "FunctionNode": {
      const f = node as unknown as { fn: MathNode; args: MathNode[] };
      const name = f.fn.type === "SymbolNode" ? (f.fn as unknown as { name: string }).name : "";
      if (!FUNCTIONS.has(name)) return bad(`function ${name || "?"} is not allowed`);
      const args = f.args.map((a) => generate(a, g, false));
      if (name === "round" && args.length === 2)
        return `(Math.round(${args[0]} * 10 ** ${args[1]}) / 10 ** ${args[1]})`;
      return `Math.${name}(${args.join(", ")})`;
    }
    default:
      // Assignments, function definitions, blocks, matrices, objects, ranges: none belong in a rule value.
      return bad(`${node.type} is not allowed in a rule expression`);
  }
}

/** The dotted name a symbol or a chain of `.name` / `["name"]` accessors spells. */
function pathOf(node: MathNode, property: string): string[] {
  const path: string[] = [];
  let n: MathNode = node;
  while (n.type === "AccessorNode") {
    const acc = n as unknown as { object: MathNode; index: { dimensions: MathNode[] } };
    const dims = acc.index.dimensions;
    const dim = dims.length === 1 ? (dims[0] as unknown as { type: string; value: unknown }) : undefined;
    if (!dim || dim.type !== "ConstantNode" || typeof dim.value !== "string") {
      throw new RuleCompileError(property, "only thing.state.<name> and observation.<name> may be referenced");
    }
    path.unshift(dim.value);
    n = acc.object;
  }
  if (n.type !== "SymbolNode") throw new RuleCompileError(property, "unsupported reference");
  path.unshift((n as unknown as { name: string }).name);
  return path;
}

/** Rule values read `thing.state.<resource>` or `observation.<resource>` (also `observation.state.<resource>`). */
const ruleNames: NameReader = (path, property) => readCode(reference(path, property));

function reference(path: readonly string[], property: string): Ref {
  if (path[0] === "thing" && path[1] === "state" && path.length >= 3) {
    return { scope: "thing", resource: path.slice(2).join(".") };
  }
  if (path[0] === "observation" && path.length >= 2) {
    const rest = path[1] === "state" && path.length >= 3 ? path.slice(2) : path.slice(1);
    return { scope: "observation", resource: rest.join(".") };
  }
  throw new RuleCompileError(
    property,
    `unknown reference ${path.join(".")}: use thing.state.<name> or observation.<name>`,
  );
}

function readCode(ref: Ref): string {
  const { type, name } = splitResource(ref.resource);
  const [state, nested] = ref.scope === "thing" ? ["ctx.ts", "ctx.tn"] : ["ctx.os", "ctx.on"];
  return type === undefined
    ? `${state}[${JSON.stringify(name)}]`
    : `nested(${nested}, ${JSON.stringify(type)}, ${JSON.stringify(name)})`;
}

/** Evaluates with mathjs itself: one scope object per call, as a naive engine would. */
function viaMathjs(root: MathNode, source: string): ValueFn {
  const compiled = mathCompile(root.toString());
  void source;
  return (ctx) => {
    const observation: Record<string, unknown> = { ...ctx.os, state: ctx.os };
    nestScope(observation, ctx.on);
    const thingState: Record<string, unknown> = { ...ctx.ts };
    nestScope(thingState, ctx.tn);
    try {
      return compiled.evaluate({ thing: { state: thingState }, observation });
    } catch {
      return NaN;
    }
  };
}

function nestScope(target: Record<string, unknown>, nested: readonly NestedObservation[] | undefined): void {
  for (const n of nested ?? []) {
    const type = n.type ?? "untyped";
    const slot = (target[type] ??= {}) as Record<string, unknown>;
    for (const [k, v] of Object.entries(n.state)) if (slot[k] === undefined) slot[k] = v;
  }
}
