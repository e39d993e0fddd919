/** Geo points as dms stores them, and the rules' shapes drawn beside a thing's track. */
import { GEOFENCE_OPERATORS, POI_OPERATORS } from "../../src/rule-model/index.js";
import type { Rule } from "./types.js";

export interface Point {
  lat: number;
  lon: number;
}

/** A geo_point in any of its stored forms: "lat,lon", {lat, lon} or [lon, lat]. */
export function pointOf(value: unknown): Point | undefined {
  if (typeof value === "string") {
    const [lat, lon] = value.split(",").map(Number);
    return lat !== undefined && lon !== undefined && Number.isFinite(lat) && Number.isFinite(lon)
      ? { lat, lon }
      : undefined;
  }
  if (Array.isArray(value) && value.length === 2) {
    const [lon, lat] = value.map(Number);
    return Number.isFinite(lat) && Number.isFinite(lon) ? { lat: lat!, lon: lon! } : undefined;
  }
  if (value && typeof value === "object") {
    const o = value as { lat?: unknown; lon?: unknown };
    const lat = Number(o.lat);
    const lon = Number(o.lon);
    return Number.isFinite(lat) && Number.isFinite(lon) ? { lat, lon } : undefined;
  }
  return undefined;
}

export type Shape =
  | { kind: "polygon"; ruleName: string; operator: string; points: Point[] }
  | { kind: "circle"; ruleName: string; operator: string; center: Point; radiusMeters: number };

const POLYGON = new Set<string>(GEOFENCE_OPERATORS);
const POI = new Set<string>(POI_OPERATORS);

/** The geofences and POIs of `rules`, as shapes to draw. */
export function shapesOf(rules: readonly Rule[]): Shape[] {
  const shapes: Shape[] = [];
  for (const rule of rules) {
    for (const e of rule.expression) {
      if (POLYGON.has(e.operator) && Array.isArray(e.value)) {
        const points = (e.value as unknown[]).map(pointOf).filter((p): p is Point => p !== undefined);
        if (points.length > 2) shapes.push({ kind: "polygon", ruleName: rule.name, operator: e.operator, points });
      } else if (POI.has(e.operator) && e.value && typeof e.value === "object") {
        const poi = e.value as { center?: unknown; radius?: unknown };
        const center = pointOf(poi.center);
        const radiusMeters = Number(poi.radius);
        if (center && Number.isFinite(radiusMeters))
          shapes.push({ kind: "circle", ruleName: rule.name, operator: e.operator, center, radiusMeters });
      }
    }
  }
  return shapes;
}
