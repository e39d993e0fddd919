import { own } from "./errors.js";
import { DEFAULT_DATE_FORMAT, type DateFormat } from "./dates.js";

/** A stored observation as FIND sees it: the row id and the parsed document. */
export interface Doc {
  id: number;
  source: Record<string, unknown>;
  /** The thing type, for `_index`. */
  thingType: string;
  /** Set by the query when scores are tracked. */
  score: number;
  /** Where the hit says it comes from, for documents that are not observations (things). */
  hit?: { index: string; type: string; id: string };
}

/** All values of a dotted field path, arrays flattened, as ES sees a multi-valued field. */
export type Accessor = (doc: Doc) => unknown[];

/**
 * The fields of the documents a request reads, noted while it is planned: every
 * read of a document's fields goes through `accessor` or `geoAccessor`, so a
 * document cut down to these paths (`projectSource`, the column cache) answers
 * every test and aggregation of the request as the whole document does.
 * `wholeSource` is set by what returns documents themselves (`top_hits`).
 */
export interface FieldUse {
  paths: Set<string>;
  wholeSource: boolean;
}

/** The use being noted: planning is synchronous, so one at a time. */
let noting: FieldUse | undefined;

/** Runs `plan` and answers what it made with the fields its accessors read. */
export function notingFields<T>(plan: () => T): [T, FieldUse] {
  const use: FieldUse = { paths: new Set(), wholeSource: false };
  const outer = noting;
  noting = use;
  try {
    return [plan(), use];
  } finally {
    noting = outer;
  }
}

/** Notes that the request answers documents' sources (`top_hits`): they cannot be cut down. */
export function noteWholeSource(): void {
  if (noting) noting.wholeSource = true;
}

export function accessor(path: string): Accessor {
  noting?.paths.add(path);
  const keys = path.split(".");
  if (keys.length === 1) {
    const k = keys[0]!;
    return (doc) => flat(doc.source[k]);
  }
  if (keys.length === 2) {
    const [a, b] = keys as [string, string];
    return (doc) => {
      const outer = doc.source[a];
      if (outer === null || typeof outer !== "object") return [];
      if (Array.isArray(outer))
        return outer.flatMap((o) => (o && typeof o === "object" ? flat((o as Record<string, unknown>)[b]) : []));
      return flat((outer as Record<string, unknown>)[b]);
    };
  }
  return (doc) => {
    let level: unknown[] = [doc.source];
    for (const k of keys) {
      const next: unknown[] = [];
      for (const v of level) {
        if (v === null || typeof v !== "object") continue;
        if (Array.isArray(v)) {
          for (const e of v)
            if (e && typeof e === "object") for (const x of flat((e as Record<string, unknown>)[k])) next.push(x);
        } else for (const x of flat((v as Record<string, unknown>)[k])) next.push(x);
      }
      level = next;
    }
    return level;
  };
}

const EMPTY: unknown[] = [];

function flat(v: unknown): unknown[] {
  if (v === undefined || v === null) return EMPTY;
  if (Array.isArray(v)) return v.filter((e) => e !== null && e !== undefined);
  return [v];
}

/** How a field is mapped: `timestamp` is a date, the envelope fields keywords, the rest typed by value. */
export function isDateField(path: string): boolean {
  return path === "timestamp";
}

export function fieldFormat(path: string, format: DateFormat | undefined): DateFormat | undefined {
  return isDateField(path) ? (format ?? DEFAULT_DATE_FORMAT) : format;
}

/** A doc value as a number for metrics: numbers, booleans (1/0) and numeric strings, as ES coerces them. */
export function toNumber(v: unknown): number | undefined {
  if (typeof v === "number") return Number.isFinite(v) ? v : undefined;
  if (typeof v === "boolean") return v ? 1 : 0;
  if (typeof v === "string" && v.trim() !== "" && !Number.isNaN(Number(v))) return Number(v);
  return undefined;
}

// ---------------------------------------------------------------- geo

export interface GeoPoint {
  lat: number;
  lon: number;
}

const BASE32 = "0123456789bcdefghjkmnpqrstuvwxyz";

/** Every geo_point form ES accepts: "lat,lon", geohash, {lat, lon}, [lon, lat]. */
export function toGeoPoint(v: unknown): GeoPoint | undefined {
  if (typeof v === "string") {
    const parts = v.split(",");
    if (parts.length === 2) {
      const lat = Number(parts[0]);
      const lon = Number(parts[1]);
      return Number.isFinite(lat) && Number.isFinite(lon) && parts[0]!.trim() !== "" ? { lat, lon } : undefined;
    }
    return isGeohash(v) ? geohash(v) : undefined;
  }
  if (Array.isArray(v)) {
    if (v.length >= 2 && typeof v[0] === "number" && typeof v[1] === "number") return { lat: v[1], lon: v[0] };
    return undefined;
  }
  if (v && typeof v === "object") {
    const o = v as Record<string, unknown>;
    const lat = toNumber(o.lat);
    const lon = toNumber(o.lon);
    return lat !== undefined && lon !== undefined ? { lat, lon } : undefined;
  }
  return undefined;
}

/** Geo values of a field: a bare [lon, lat] pair is one point, not two numbers. */
export function geoAccessor(path: string): (doc: Doc) => GeoPoint[] {
  noting?.paths.add(path);
  const keys = path.split(".");
  return (doc) => {
    let v: unknown = doc.source;
    for (const k of keys) {
      if (v === null || typeof v !== "object" || Array.isArray(v)) return [];
      v = (v as Record<string, unknown>)[k];
    }
    return geoPointsOf(v);
  };
}

/** The geo points of a field's value: one point in any form, or an array of them. */
export function geoPointsOf(v: unknown): GeoPoint[] {
  if (v === undefined || v === null) return [];
  const single = toGeoPoint(v);
  if (single) return [single];
  if (Array.isArray(v)) return v.map(toGeoPoint).filter((p): p is GeoPoint => p !== undefined);
  return [];
}

/**
 * A geohash as a point, as ES indexes one (5.6's GeoPoint.resetFromGeoHash and
 * OpenSearch alike): the south-west corner of its cell.
 */
function geohash(hash: string): GeoPoint {
  const cell = geohashCell(hash);
  return { lat: cell.bottom, lon: cell.left };
}

/** The cell of a geohash. */
export function geohashCell(hash: string): { top: number; bottom: number; left: number; right: number } {
  let even = true;
  const lat = [-90, 90];
  const lon = [-180, 180];
  for (const c of hash) {
    const bits = BASE32.indexOf(c);
    for (let b = 4; b >= 0; b--) {
      const bit = (bits >> b) & 1;
      const range = even ? lon : lat;
      const mid = (range[0]! + range[1]!) / 2;
      range[bit ? 0 : 1] = mid;
      even = !even;
    }
  }
  return { bottom: lat[0]!, top: lat[1]!, left: lon[0]!, right: lon[1]! };
}

export const isGeohash = (v: unknown): v is string => typeof v === "string" && /^[0-9b-hjkmnp-z]{1,12}$/.test(v);

/**
 * Lucene's LatLonPoint quantization (32 bits per axis): ES 5.6 answers geo
 * aggregations with the decoded doc values, so we round the same way.
 */
export function quantize(p: GeoPoint): GeoPoint {
  const latStep = 180 / 2 ** 32;
  const lonStep = 360 / 2 ** 32;
  const lat = p.lat === 90 ? 2 ** 31 - 1 : Math.floor(p.lat / latStep);
  const lon = p.lon === 180 ? 2 ** 31 - 1 : Math.floor(p.lon / lonStep);
  return { lat: lat * latStep, lon: lon * lonStep };
}

/** ES 5.6 `arc` distance: haversine on the mean earth radius, in metres. */
export function arcDistance(a: GeoPoint, b: GeoPoint): number {
  const R = 6_371_008.7714;
  const toRad = Math.PI / 180;
  const dLat = (b.lat - a.lat) * toRad;
  const dLon = (b.lon - a.lon) * toRad;
  const h = Math.sin(dLat / 2) ** 2 + Math.cos(a.lat * toRad) * Math.cos(b.lat * toRad) * Math.sin(dLon / 2) ** 2;
  return 2 * R * Math.asin(Math.min(1, Math.sqrt(h)));
}

const DISTANCE_UNITS: Record<string, number> = {
  mi: 1609.344,
  miles: 1609.344,
  yd: 0.9144,
  yards: 0.9144,
  ft: 0.3048,
  feet: 0.3048,
  in: 0.0254,
  inch: 0.0254,
  km: 1000,
  kilometers: 1000,
  m: 1,
  meters: 1,
  cm: 0.01,
  centimeters: 0.01,
  mm: 0.001,
  millimeters: 0.001,
  NM: 1852,
  nmi: 1852,
  nauticalmiles: 1852,
};

/** A distance such as `12km`, `200m` or a number of metres. */
export function parseDistance(v: unknown, defaultUnit = "m"): number | undefined {
  if (typeof v === "number") return v * DISTANCE_UNITS[defaultUnit]!;
  if (typeof v !== "string") return undefined;
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$/.exec(v);
  if (!m) return undefined;
  const unit = own(DISTANCE_UNITS, m[2] || defaultUnit);
  return unit === undefined ? undefined : Number(m[1]) * unit;
}

// ---------------------------------------------------------------- output

/** Java's Double.toString, which ES uses in range keys such as `*-100.0`. */
export function javaDouble(n: number): string {
  if (Number.isInteger(n) && Math.abs(n) < 1e7) return `${n}.0`;
  const abs = Math.abs(n);
  if (abs >= 1e-3 && abs < 1e7) return String(n);
  const [mant, exp] = n.toExponential().split("e") as [string, string];
  return `${mant.includes(".") ? mant : `${mant}.0`}E${Number(exp)}`;
}
