import type { DataType, ResourceDefinition } from "../things/index.js";
import { readGeoPoint, type LonLat } from "./compile/index.js";

/** What the engine needs to know of an observation's thing; resolved once and cached. */
export interface ThingInfo {
  thingName: string;
  thingType: string;
  domain: string;
  /** The thing's domain and every domain above it: a rule filtered on any of them applies. */
  domains: ReadonlySet<string>;
  /** Type checks of the resources the thing type declares; undeclared resources pass. */
  checks: ReadonlyMap<string, (value: unknown) => boolean>;
}

/** Undefined: an unknown thing, whose observations are dead letters. */
export type ThingResolver = (thingName: string) => ThingInfo | undefined;

const scratch: LonLat = [0, 0];
const CHECKS: Record<DataType, ((v: unknown) => boolean) | undefined> = {
  long: (v) => typeof v === "number" && Number.isFinite(v),
  double: (v) => typeof v === "number" && Number.isFinite(v),
  string: (v) => typeof v === "string",
  boolean: (v) => typeof v === "boolean",
  geo_point: (v) => readGeoPoint(v, scratch),
  date: (v) => (typeof v === "number" && Number.isFinite(v)) || (typeof v === "string" && !Number.isNaN(Date.parse(v))),
  unknown: undefined,
};

/** The type checks of a thing type's resources, built once per thing type. */
export function resourceChecks(
  resources: readonly ResourceDefinition[],
): ReadonlyMap<string, (value: unknown) => boolean> {
  const checks = new Map<string, (value: unknown) => boolean>();
  for (const r of resources) {
    const check = CHECKS[r.dataType];
    // null clears a resource whatever its type.
    if (check) checks.set(r.name, (v) => v === null || check(v));
  }
  return checks;
}
