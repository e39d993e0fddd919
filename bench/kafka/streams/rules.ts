/**
 * dms rules as bench/kafka's Streams peer evaluates them (Rules.java): per rule its thing type, its
 * threshold and its conditions as plain data (a resource compared with a constant or with
 * `a * <resource> + b` of the observation or of the thing's state before it, or a geofence), the
 * geofences as bench/engine's peer gives them to Geo.java. What it cannot translate faithfully it
 * refuses rather than translates loosely.
 */
import type { ExpressionItem, Rule } from "../../../src/rules/index.js";
import { geofence } from "../../engine/peer/translate.js";

/** Rules.java's field numbers. */
const FIELDS: Record<string, number> = { temp: 0, hum: 1, press: 2, status: 3, latlng: 4 };
const NUMBERS = new Set(["temp", "hum", "press"]);
const COMPARE = new Set(["gt", "gte", "lt", "lte", "eq", "ne"]);
const GEOFENCE = new Set(["inside", "outside", "enter", "leave"]);

export interface StreamsCondition {
  op: string;
  field: number;
  number?: number;
  string?: string;
  /** `${...}`: mul * <exprField> + add, of the state before the observation (prev) or of the observation. */
  prev?: boolean;
  exprField?: number;
  mul?: number;
  add?: number;
  geo?: number;
  poi?: boolean;
}

export interface StreamsSpec {
  things: [string, string][];
  polygons: [number, number][][];
  pois: [number, number, number][];
  rules: { id: string; type: string; count: number; conditions: StreamsCondition[] }[];
}

export function streamsSpec(
  rules: readonly Rule[],
  things: readonly { thingName: string; thingType: string }[],
): StreamsSpec {
  const spec: StreamsSpec = {
    things: things.map((t) => [t.thingName, t.thingType]),
    polygons: [],
    pois: [],
    rules: [],
  };
  for (const rule of rules) {
    if (!rule.enabled) continue;
    if (rule.filter.thingNames !== undefined)
      throw new Error(`${rule.id}: the peer translates thing type filters only`);
    spec.rules.push({
      id: rule.id,
      type: rule.filter.thingType,
      count: Math.max(1, rule.threshold.count),
      conditions: rule.expression.map((item) => condition(item, spec)),
    });
  }
  return spec;
}

function condition(item: ExpressionItem, spec: StreamsSpec): StreamsCondition {
  const field = FIELDS[item.resource];
  if (field === undefined) throw new Error(`the peer has no resource ${item.resource}`);
  const op = item.operator;
  if (GEOFENCE.has(op.replace(/Poi$/, ""))) {
    if (item.resource !== "latlng") throw new Error(`${op} needs resource latlng`);
    return { op, field, geo: geofence(item, spec), poi: op.endsWith("Poi") };
  }
  if (!COMPARE.has(op)) throw new Error(`the peer has no operator ${op}`);
  const v = item.value;
  if (typeof v === "number") {
    if (!NUMBERS.has(item.resource)) throw new Error(`a number compared with ${item.resource}`);
    return { op, field, number: v };
  }
  if (typeof v !== "string") throw new Error(`${op} needs a number or a string`);
  const expr = /^\$\{\s*(thing\.state|observation)\.(\w+)\s*(?:\*\s*(-?[\d.]+)\s*)?(?:([+-])\s*([\d.]+)\s*)?\}$/.exec(
    v,
  );
  if (expr) {
    const exprField = FIELDS[expr[2]!];
    if (exprField === undefined || !NUMBERS.has(expr[2]!) || !NUMBERS.has(item.resource))
      throw new Error(`the peer compares numbers only: ${v}`);
    const add = Number(expr[5] ?? 0) * (expr[4] === "-" ? -1 : 1);
    return { op, field, prev: expr[1] === "thing.state", exprField, mul: Number(expr[3] ?? 1), add };
  }
  if (v.includes("${")) throw new Error(`the peer translates a * <resource> + b only: ${v}`);
  if (item.resource !== "status" || (op !== "eq" && op !== "ne"))
    throw new Error(`a string compared with ${item.resource}`);
  return { op, field, string: v };
}
