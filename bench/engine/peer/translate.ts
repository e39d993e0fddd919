/**
 * dms rules as Esper EPL (bench/engine's JVM peer). Each rule becomes one statement: the thing type
 * and the rule's resources as the stream's filter (Esper indexes them), and its expression as the
 * condition of a `match_recognize` pattern `A{count}` partitioned by thing, which is dms's threshold:
 * `count` consecutive observations of a thing matching, then a fresh start (Esper's default "skip past
 * last row"). An observation of the thing that the filter lets through and that does not match breaks
 * the pattern, as it resets dms's count; one the filter keeps out (it carries none of the rule's
 * resources) is not seen by the pattern, as it neither matches nor resets in dms (docs/engine.md,
 * "Partial observations").
 *
 * Constants, thing types and geofence numbers are substitution parameters, so the statements of one
 * shape compile once and are deployed once per rule with their values.
 */
import type { ExpressionItem, Poi, Rule } from "../../../src/rules/index.js";

/** One substitution parameter: name, EPL type, value. */
export type Param = [name: string, type: "string" | "double" | "int", value: string | number];

export interface Statement {
  rule: string;
  epl: string;
  params: Param[];
  /** The stream filter's resource part: the observation carries one of the rule's resources. */
  presence: string;
  /** The rule's expression over the event `A`, its constants as the parameters `?:vN:type`. */
  condition: string;
  /** The threshold: consecutive matching observations that fire. */
  count: number;
}

export interface PeerSpec {
  /** [thingName, thingType]: the registry the harness resolves things with. */
  things: [string, string][];
  /** Rings of [lon, lat], closed. */
  polygons: [number, number][][];
  /** [lat, lon, radius in metres]. */
  pois: [number, number, number][];
  statements: Statement[];
}

/** The observation resources the peer's event type has (bench/engine/peer/src/main/java/dms/peer/Obs.java). */
const NUMBERS: Record<string, string> = { temp: "Temp", hum: "Hum", press: "Press" };
const STRINGS: Record<string, string> = { status: "Status" };
const POSITION = "latlng";

const COMPARE: Partial<Record<ExpressionItem["operator"], string>> = {
  gt: ">",
  gte: ">=",
  lt: "<",
  lte: "<=",
  eq: "=",
  ne: "!=",
};

export function translate(
  rules: readonly Rule[],
  things: readonly { thingName: string; thingType: string }[],
): PeerSpec {
  const spec: PeerSpec = {
    things: things.map((t) => [t.thingName, t.thingType]),
    polygons: [],
    pois: [],
    statements: [],
  };
  for (const rule of rules) if (rule.enabled) spec.statements.push(statement(rule, spec));
  return spec;
}

function statement(rule: Rule, spec: PeerSpec): Statement {
  if (rule.filter.thingNames !== undefined) throw new Error(`${rule.id}: the peer translates thing type filters only`);
  const params: Param[] = [["type", "string", rule.filter.thingType]];
  const conditions = rule.expression.map((item, i) => condition(item, `v${i}`, params, spec));
  const resources = [...new Set(rule.expression.map((item) => presence(item.resource)))];
  const count = Math.max(1, rule.threshold.count);
  const carries = resources.join(" or ");
  const matches = conditions.join(" and ");
  const epl = [
    `select * from Obs(thingType = ?:type:string and (${carries}))`,
    "match_recognize (",
    "  partition by thingName",
    "  measures A[0].thingName as thingName",
    `  pattern (A{${count}})`,
    `  define A as ${matches}`,
    ")",
  ].join("\n");
  return { rule: rule.id, epl, params, presence: carries, condition: matches, count };
}

/** The filter term for "the observation carries this resource". */
function presence(resource: string): string {
  if (resource === POSITION) return "lat is not null";
  return `${field(resource)} is not null`;
}

function field(resource: string, prefix = ""): string {
  const name = NUMBERS[resource] ?? STRINGS[resource];
  if (name === undefined) throw new Error(`the peer's event type has no resource ${resource}`);
  return prefix === "" ? name.charAt(0).toLowerCase() + name.slice(1) : `${prefix}${name}`;
}

function condition(item: ExpressionItem, param: string, params: Param[], spec: PeerSpec): string {
  const op = item.operator;
  const cmp = COMPARE[op];
  if (cmp !== undefined) {
    const left = `A.${field(item.resource)}`;
    const v = item.value;
    if (typeof v === "number") {
      if (!(item.resource in NUMBERS)) throw new Error(`a number compared with ${item.resource}`);
      params.push([param, "double", v]);
      return `${left} ${cmp} ?:${param}:double`;
    }
    if (typeof v !== "string") throw new Error(`${op} needs a number or a string`);
    const expr = /^\$\{(.*)\}$/s.exec(v);
    if (expr) return `${left} ${cmp} ${arithmetic(expr[1]!)}`;
    if (!(item.resource in STRINGS)) throw new Error(`a string compared with ${item.resource}`);
    params.push([param, "string", v]);
    return `${left} ${cmp} ?:${param}:string`;
  }
  if (item.resource !== POSITION) throw new Error(`${op} needs resource latlng`);
  const fn = op.endsWith("Poi") ? "inPoi" : "inPolygon";
  const g = geofence(item, spec);
  params.push([param, "int", g]);
  const cur = `${fn}(A.lon, A.lat, ?:${param}:int)`;
  const prev = `${fn}(A.prevLon, A.prevLat, ?:${param}:int)`;
  const hasCur = "A.lat is not null";
  const hasPrev = "A.prevLat is not null";
  switch (op.replace(/Poi$/, "")) {
    case "inside":
      return cur;
    case "outside":
      return `(${hasCur} and not ${cur})`;
    case "enter":
      return `(${hasCur} and ${hasPrev} and ${cur} and not ${prev})`;
    case "leave":
      return `(${hasCur} and ${hasPrev} and not ${cur} and ${prev})`;
    default:
      throw new Error(`the peer has no operator ${op}`);
  }
}

/**
 * A geofence item's shape into the spec (a POI as [lat, lon, radius], a polygon as a closed ring of
 * [lon, lat]), as Geo.java loads them; returns its index.
 */
export function geofence(item: ExpressionItem, spec: Pick<PeerSpec, "polygons" | "pois">): number {
  if (item.operator.endsWith("Poi")) {
    const p = item.value as Poi;
    return spec.pois.push([Number(p.center.lat), Number(p.center.lon), Number(p.radius)]) - 1;
  }
  const ring = (item.value as [number, number][]).map(([lon, lat]): [number, number] => [lon, lat]);
  const [first, last] = [ring[0]!, ring[ring.length - 1]!];
  if (first[0] !== last[0] || first[1] !== last[1]) ring.push([first[0], first[1]]);
  return spec.polygons.push(ring) - 1;
}

/**
 * A `${...}` expression of arithmetic over `thing.state.<r>` (the merged state before this
 * observation: the event's prev fields) and `observation.<r>` (this observation). Anything else
 * is refused rather than translated loosely.
 */
function arithmetic(src: string): string {
  const out = src.replace(/\b(thing\.state|observation(?:\.state)?)\.(\w+)/g, (_, scope: string, name: string) =>
    scope === "thing.state" ? `A.${field(name, "prev")}` : `A.${field(name)}`,
  );
  if (!/^[\sA.a-zA-Z0-9+\-*/()]*$/.test(out) || /[a-zA-Z]/.test(out.replace(/A\.\w+/g, ""))) {
    throw new Error(`the peer translates arithmetic over thing.state and observation only: ${src}`);
  }
  return out;
}
