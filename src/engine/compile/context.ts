import type { NestedObservation } from "../types.js";
import type { LonLat } from "./geo.js";

/**
 * What compiled rules read. The engine owns one and refills it for each
 * observation, so evaluating allocates nothing per observation.
 */
export class EvalContext {
  /** This observation's state (`observation.<name>`). */
  os: Record<string, unknown> = {};
  /** This observation's nested objects. */
  on: readonly NestedObservation[] | undefined = undefined;
  /** The thing's state before this observation (`thing.state.<name>`). */
  ts: Record<string, unknown> = {};
  /** The thing's nested objects before this observation. */
  tn: readonly NestedObservation[] | undefined = undefined;
  /** This observation's position, when `hasCur`. */
  hasCur = false;
  readonly cur: LonLat = [0, 0];
  /** The thing's previous position, when `hasPrev`. */
  hasPrev = false;
  readonly prev: LonLat = [0, 0];
}

export const UNTYPED = "untyped";

/** The first value of `resource` among nested objects of `type`, for expressions that need one value. */
export function nestedValue(list: readonly NestedObservation[] | undefined, type: string, resource: string): unknown {
  if (list === undefined) return undefined;
  for (let i = 0; i < list.length; i++) {
    const n = list[i]!;
    if ((n.type ?? UNTYPED) === type && n.state[resource] !== undefined) return n.state[resource];
  }
  return undefined;
}

/** `<type>.<resource>` splits at the first dot; a name without a dot is a resource of the thing itself. */
export function splitResource(resource: string): { type: string | undefined; name: string } {
  const dot = resource.indexOf(".");
  return dot < 0
    ? { type: undefined, name: resource }
    : { type: resource.slice(0, dot), name: resource.slice(dot + 1) };
}
