import type { ExpressionItem, Operator, Rule } from "../../rule-model/index.js";
import { OPERATORS } from "../../rule-model/index.js";
import { UNTYPED, splitResource, type EvalContext } from "./context.js";
import { RuleCompileError } from "./errors.js";
import {
  compileComparison,
  compileValueExpression,
  isExpression,
  type ExpressionMode,
  type ValueFn,
} from "./expression.js";
import { compilePoi, compilePolygon, type PointTest, type Region } from "./geo.js";

/** One prepared condition: reads the context, decides, allocates nothing. */
export type Test = (ctx: EvalContext) => boolean;

export type IndexOp = "gt" | "gte" | "lt" | "lte" | "eq";

/** A comparison of a thing's own resource with a constant, which the engine finds through a sorted index. */
export interface IndexKey {
  resource: string;
  op: IndexOp;
  value: number | string;
}

export interface CompiledExpression {
  item: ExpressionItem;
  test: Test;
  /** Rough cost, so that cheap conditions run first: the conjunction's answer does not depend on order. */
  cost: number;
  index: IndexKey | undefined;
  /** Set when the observation's position must lie in this region (inside, insidePoi, enter, enterPoi). */
  area?: Region | undefined;
  /** Set when the thing's previous position must lie in this region (leave, leavePoi). */
  prevArea?: Region | undefined;
}

export interface CompiledRule {
  readonly id: string;
  readonly rule: Rule;
  readonly thingType: string;
  readonly domain: string;
  readonly thingNames: ReadonlySet<string> | undefined;
  /** Consecutive matches needed, at least 1. */
  readonly count: number;
  readonly intervalMs: number;
  /**
   * A hash of the conditions (filter, expression, threshold): a threshold entry written under
   * other conditions is no count of these. Entries carry it because a thing's state may sit in
   * the database (another engine's, or not loaded since a rebalance) when the rule changes.
   */
  readonly version: number;
  readonly expressions: readonly CompiledExpression[];
  /** Every expression. */
  readonly test: Test;
  /** The indexed expression, when there is one; `rest` is then every other expression. */
  readonly index: IndexKey | undefined;
  /** `always` when the indexed expression is the only one. */
  readonly rest: Test;
  /** Without a constant index: the region the observation's position must lie in, for the spatial grid. */
  readonly area: Region | undefined;
  /**
   * Whether `test` is exactly "the observation's position lies in `area`" (one inside or insidePoi
   * item): where the region answers IN for certain, the rule matches without running its test.
   */
  readonly areaOnly: boolean;
  /** Without a constant index or `area`: the region the previous position must lie in (leave), for a second grid. */
  readonly prevArea: Region | undefined;
  /**
   * Whether an observation carries at least one resource the rule's items name (`latlng` for the
   * geofence operators, `<type>.<resource>` in a nested object of that type): only such an
   * observation counts for the rule's threshold, matching or resetting it. Devices report partial
   * state, and an observation of other resources says nothing about this rule's conditions.
   */
  readonly concerns: Test;
}

export interface CompileOptions {
  expressionMode?: ExpressionMode;
}

const POSITION = "latlng";

/** What a change must touch to restart a rule's thresholds: its conditions, not its name or actions. */
export function conditionsOf(rule: Rule): string {
  return JSON.stringify([rule.filter, rule.expression, rule.threshold]);
}

/** FNV-1a over the conditions' text: 32 bits are plenty to tell one rule's versions apart. */
function conditionsVersion(rule: Rule): number {
  const text = conditionsOf(rule);
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}
const OPERATOR_SET: ReadonlySet<string> = new Set(OPERATORS);

/**
 * Turns a rule into closures once, at create/update time (Hono's "prepare
 * once, run small"): operator, value kind, resource path, geometry and
 * threshold are resolved here so that evaluation only calls functions.
 * Throws RuleCompileError (INVALID_ARGUMENTS) for a rule that cannot run.
 */
export function compileRule(rule: Rule, options: CompileOptions = {}): CompiledRule {
  if (!rule.filter || typeof rule.filter.thingType !== "string" || typeof rule.filter.domain !== "string") {
    throw new RuleCompileError("filter", "filter needs domain and thingType");
  }
  if (!Array.isArray(rule.expression) || rule.expression.length === 0) {
    throw new RuleCompileError("expression", "at least one expression item is required");
  }
  const count = Number(rule.threshold?.count);
  const interval = Number(rule.threshold?.interval);
  if (!Number.isFinite(count) || count < 0) throw new RuleCompileError("threshold", "count is a number >= 0");
  if (!Number.isFinite(interval) || interval < 0) throw new RuleCompileError("threshold", "interval is a number >= 0");

  const expressions = rule.expression
    .map((item, i) => compileExpression(item, `expression[${i}]`, options))
    .sort((a, b) => a.cost - b.cost);
  const indexed = expressions.find((e) => e.index !== undefined);
  return {
    id: rule.id,
    rule,
    thingType: rule.filter.thingType,
    domain: rule.filter.domain,
    thingNames: rule.filter.thingNames?.length ? new Set(rule.filter.thingNames) : undefined,
    count: Math.max(1, Math.floor(count)),
    intervalMs: interval * 1000,
    version: conditionsVersion(rule),
    expressions,
    test: all(expressions.map((e) => e.test)),
    index: indexed?.index,
    rest: all(expressions.filter((e) => e !== indexed).map((e) => e.test)),
    area: indexed ? undefined : expressions.find((e) => e.area !== undefined)?.area,
    areaOnly:
      expressions.length === 1 &&
      (expressions[0]!.item.operator === "inside" || expressions[0]!.item.operator === "insidePoi"),
    prevArea: indexed ? undefined : expressions.find((e) => e.prevArea !== undefined)?.prevArea,
    concerns: concernsTest(rule.expression),
  };
}

/** The observation resources a rule's items name, and a test for an observation carrying one of them. */
function concernsTest(items: readonly ExpressionItem[]): Test {
  const own = new Set<string>();
  const nested = new Map<string, { type: string; name: string }>();
  for (const item of items) {
    const { type, name } = splitResource(item.resource);
    if (type === undefined) own.add(name);
    else nested.set(item.resource, { type, name });
  }
  const names = [...own];
  const pairs = [...nested.values()];
  // Every item names a resource (the schema requires it), so this is only a safe default.
  if (names.length === 0 && pairs.length === 0) return () => true;
  // Own keys only: a resource named `constructor` must not be found on every object's prototype.
  // One resource of the thing's own (most rules): one look, no loop (the prune asks it of every
  // count the observation did not continue).
  if (names.length === 1 && pairs.length === 0) {
    const name = names[0]!;
    return (ctx) => Object.hasOwn(ctx.os, name);
  }
  return (ctx) => {
    const os = ctx.os;
    for (let i = 0; i < names.length; i++) if (Object.hasOwn(os, names[i]!)) return true;
    const list = ctx.on;
    if (list === undefined || pairs.length === 0) return false;
    for (let i = 0; i < list.length; i++) {
      const n = list[i]!;
      const t = n.type ?? UNTYPED;
      for (let j = 0; j < pairs.length; j++)
        if (pairs[j]!.type === t && Object.hasOwn(n.state, pairs[j]!.name)) return true;
    }
    return false;
  };
}

/** The test of no expressions: one function, so that a caller can tell it and skip the call. */
export const always: Test = () => true;

function all(tests: Test[]): Test {
  if (tests.length === 0) return always;
  if (tests.length === 1) return tests[0]!;
  if (tests.length === 2) {
    const [a, b] = tests as [Test, Test];
    return (ctx) => a(ctx) && b(ctx);
  }
  return (ctx) => {
    for (let i = 0; i < tests.length; i++) if (!tests[i]!(ctx)) return false;
    return true;
  };
}

export function compileExpression(
  item: ExpressionItem,
  property: string,
  options: CompileOptions = {},
): CompiledExpression {
  if (!item || typeof item !== "object") throw new RuleCompileError(property, "an expression item is an object");
  if (!OPERATOR_SET.has(item.operator))
    throw new RuleCompileError(`${property}.operator`, `unknown operator ${String(item.operator)}`);
  if (typeof item.resource !== "string" || item.resource.length === 0) {
    throw new RuleCompileError(`${property}.resource`, "resource is a non-empty string");
  }
  const op: Operator = item.operator;
  const valueProperty = `${property}.value`;
  switch (op) {
    case "gt":
    case "gte":
    case "lt":
    case "lte":
    case "eq":
    case "ne":
      return valueExpression(item, op, valueProperty, options);
    case "inside":
    case "outside":
    case "enter":
    case "leave":
      return geoExpression(item, op, compilePolygon(item.value, valueProperty), 3, `${property}.resource`);
    case "insidePoi":
    case "outsidePoi":
    case "enterPoi":
    case "leavePoi":
      return geoExpression(item, op, compilePoi(item.value, valueProperty), 2, `${property}.resource`);
  }
}

function geoExpression(
  item: ExpressionItem,
  op: Operator,
  pt: PointTest,
  cost: number,
  property: string,
): CompiledExpression {
  if (item.resource !== POSITION) throw new RuleCompileError(property, `with ${op} the resource must be latlng`);
  let test: Test;
  switch (op) {
    case "inside":
    case "insidePoi":
      test = (ctx) => ctx.hasCur && pt(ctx.cur);
      break;
    case "outside":
    case "outsidePoi":
      test = (ctx) => ctx.hasCur && !pt(ctx.cur);
      break;
    case "enter":
    case "enterPoi":
      // No previous position, no transition: a thing seen for the first time has not entered anything.
      test = (ctx) => ctx.hasCur && ctx.hasPrev && pt(ctx.cur) && !pt(ctx.prev);
      break;
    default:
      test = (ctx) => ctx.hasCur && ctx.hasPrev && !pt(ctx.cur) && pt(ctx.prev);
  }
  const area = op === "inside" || op === "insidePoi" || op === "enter" || op === "enterPoi" ? pt.region : undefined;
  const prevArea = op === "leave" || op === "leavePoi" ? pt.region : undefined;
  return { item, test, cost, index: undefined, area, prevArea };
}

type Cmp = (v: unknown, ctx: EvalContext) => boolean;
const NUMERIC = /^\s*-?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?\s*$/;

function valueExpression(
  item: ExpressionItem,
  op: Operator,
  property: string,
  options: CompileOptions,
): CompiledExpression {
  const value = item.value;
  let cmp: Cmp;
  let cost = 0;
  let index: IndexKey | undefined;
  const { type, name } = splitResource(item.resource);
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new RuleCompileError(property, "a finite number");
    cmp = numberCmp(op, value);
    if (op !== "ne" && type === undefined) index = { resource: name, op: op as IndexOp, value };
  } else if (isExpression(value)) {
    const fused = type === undefined ? compileComparison(value, property, op, name, options.expressionMode) : undefined;
    if (fused !== undefined) return { item, test: fused, cost: 1, index };
    cmp = dynamicCmp(op, compileValueExpression(value, property, options.expressionMode));
    cost = 1;
  } else if (typeof value === "string") {
    if (NUMERIC.test(value)) {
      // "25" compares numerically with numbers and as text with strings.
      const n = numberCmp(op, Number(value));
      const s = stringCmp(op, value);
      cmp = (v, ctx) => (typeof v === "number" ? n(v, ctx) : s(v, ctx));
    } else {
      cmp = stringCmp(op, value);
      if (op === "eq" && type === undefined) index = { resource: name, op: "eq", value };
    }
  } else {
    throw new RuleCompileError(property, `${op} compares with a number, a string or a \${...} expression`);
  }
  return { item, test: resourceTest(type, name, cmp), cost, index };
}

function resourceTest(type: string | undefined, name: string, cmp: Cmp): Test {
  if (type === undefined) return (ctx) => cmp(ctx.os[name], ctx);
  // A nested resource matches when any nested object of its type matches.
  return (ctx) => {
    const list = ctx.on;
    if (list === undefined) return false;
    for (let i = 0; i < list.length; i++) {
      const n = list[i]!;
      if ((n.type ?? UNTYPED) === type && cmp(n.state[name], ctx)) return true;
    }
    return false;
  };
}

function numberCmp(op: Operator, c: number): Cmp {
  switch (op) {
    case "gt":
      return (v) => typeof v === "number" && v > c;
    case "gte":
      return (v) => typeof v === "number" && v >= c;
    case "lt":
      return (v) => typeof v === "number" && v < c;
    case "lte":
      return (v) => typeof v === "number" && v <= c;
    case "eq":
      return (v) => v === c;
    default:
      return (v) => typeof v === "number" && v !== c;
  }
}

function stringCmp(op: Operator, c: string): Cmp {
  switch (op) {
    case "gt":
      return (v) => typeof v === "string" && v > c;
    case "gte":
      return (v) => typeof v === "string" && v >= c;
    case "lt":
      return (v) => typeof v === "string" && v < c;
    case "lte":
      return (v) => typeof v === "string" && v <= c;
    case "eq":
      // Booleans compare with "true"/"false".
      return (v) => v === c || (typeof v === "boolean" && String(v) === c);
    default:
      return (v) => (typeof v === "string" && v !== c) || (typeof v === "boolean" && String(v) !== c);
  }
}

/** Compares with a `${...}` value: numbers with numbers, strings with strings, anything else does not match. */
function dynamicCmp(op: Operator, fn: ValueFn): Cmp {
  const same = (v: unknown, r: unknown): boolean =>
    (typeof v === "number" && typeof r === "number" && !Number.isNaN(r)) ||
    (typeof v === "string" && typeof r === "string");
  switch (op) {
    case "gt":
      return (v, ctx) => {
        const r = fn(ctx);
        return same(v, r) && (v as number) > (r as number);
      };
    case "gte":
      return (v, ctx) => {
        const r = fn(ctx);
        return same(v, r) && (v as number) >= (r as number);
      };
    case "lt":
      return (v, ctx) => {
        const r = fn(ctx);
        return same(v, r) && (v as number) < (r as number);
      };
    case "lte":
      return (v, ctx) => {
        const r = fn(ctx);
        return same(v, r) && (v as number) <= (r as number);
      };
    case "eq":
      return (v, ctx) => {
        const r = fn(ctx);
        return same(v, r) && v === r;
      };
    default:
      return (v, ctx) => {
        const r = fn(ctx);
        return same(v, r) && v !== r;
      };
  }
}
