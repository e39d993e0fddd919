import { orient2d } from "robust-predicates";
import type { Poi } from "../../rule-model/index.js";
import { RuleCompileError } from "./errors.js";

/** `[lon, lat]`, the GeoJSON order turf works in. */
export type LonLat = [number, number];

const GEOHASH = "0123456789bcdefghjkmnpqrstuvwxyz";
const DECIMAL = String.raw`-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?`;
// eslint-disable-next-line no-restricted-syntax -- built from a constant
const LAT_LON = new RegExp(String.raw`^\s*(${DECIMAL})\s*,\s*(${DECIMAL})\s*$`);
const WKT_POINT = /^\s*POINT\s*\(\s*(-?[\d.eE+-]+)\s+(-?[\d.eE+-]+)\s*\)\s*$/i;

/**
 * Reads every Elasticsearch geo_point form into `out` without allocating:
 * `"lat,lon"`, a geohash, WKT `POINT (lon lat)`, `{lat, lon}` and `[lon, lat]`.
 * Returns false when `value` is none of them or out of range.
 */
export function readGeoPoint(value: unknown, out: LonLat): boolean {
  let lat: number;
  let lon: number;
  if (typeof value === "string") {
    // The common form first, read in place: no substrings, no regular expression.
    if (readLatLonText(value, out)) return true;
    if (value.includes(",")) {
      // Spaces, exponents, `1.` or `.5` (Java's parseDouble, which Elasticsearch uses, reads them).
      const m = LAT_LON.exec(value);
      if (!m) return false;
      lat = Number(m[1]);
      lon = Number(m[2]);
    } else {
      const wkt = WKT_POINT.exec(value);
      if (wkt) {
        lon = Number(wkt[1]);
        lat = Number(wkt[2]);
      } else if (!decodeGeohash(value, out)) return false;
      else return true;
    }
  } else if (Array.isArray(value)) {
    if (value.length < 2 || value.length > 3) return false;
    lon = value[0] as number;
    lat = value[1] as number;
    if (typeof lon !== "number" || typeof lat !== "number") return false;
  } else if (value !== null && typeof value === "object") {
    const o = value as { lat?: unknown; lon?: unknown };
    lat = typeof o.lat === "string" ? Number(o.lat) : (o.lat as number);
    lon = typeof o.lon === "string" ? Number(o.lon) : (o.lon as number);
    if (typeof lat !== "number" || typeof lon !== "number") return false;
  } else return false;
  if (!(lat >= -90 && lat <= 90 && lon >= -180 && lon <= 180)) return false;
  out[0] = lon;
  out[1] = lat;
  return true;
}

/**
 * `"lat,lon"` with plain decimals (`-59.91234,10.5`) of at most 15 digits
 * each, into `out` as [lon, lat]; false for anything else (exponents, spaces,
 * longer numbers, out of range), which the general path then reads. Each
 * number is mantissa / 10^scale with both exact doubles: one correctly rounded
 * division, the same double as `Number()`.
 */
function readLatLonText(s: string, out: LonLat): boolean {
  const lat = decimalAt(s, 0, COMMA);
  if (Number.isNaN(lat)) return false;
  const lon = decimalAt(s, scanEnd + 1, -1);
  if (Number.isNaN(lon) || scanEnd !== s.length) return false;
  if (!(lat >= -90 && lat <= 90 && lon >= -180 && lon <= 180)) return false;
  out[0] = lon;
  out[1] = lat;
  return true;
}

const COMMA = 0x2c;
/** Where the last `decimalAt` stopped (module scope, so that reading returns a plain number). */
let scanEnd = 0;

/** The decimal starting at `i` and ending at `stop` (a char code) or the end of `s`; NaN if it is not a plain one. */
function decimalAt(s: string, i: number, stop: number): number {
  const negative = s.charCodeAt(i) === 0x2d;
  if (negative) i++;
  let mantissa = 0;
  let digits = 0;
  let scale = -1;
  for (; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x30 && c <= 0x39) {
      mantissa = mantissa * 10 + (c - 0x30);
      digits++;
      if (scale >= 0) scale++;
    } else if (c === 0x2e && scale < 0 && digits > 0) scale = 0;
    else if (c === stop) break;
    else return NaN;
  }
  if (digits === 0 || digits > 15 || scale === 0 || (stop >= 0 && i >= s.length)) return NaN;
  scanEnd = i;
  const v = scale > 0 ? mantissa / POW10[scale]! : mantissa;
  return negative ? -v : v;
}

/** 10^0 .. 10^15, all exact doubles. */
const POW10 = Array.from({ length: 16 }, (_, k) => 10 ** k);

/** The centre of a geohash cell, as Elasticsearch reads a geohash geo_point. */
function decodeGeohash(hash: string, out: LonLat): boolean {
  if (hash.length === 0 || hash.length > 12) return false;
  let latMin = -90;
  let latMax = 90;
  let lonMin = -180;
  let lonMax = 180;
  let even = true;
  for (const ch of hash.toLowerCase()) {
    const bits = GEOHASH.indexOf(ch);
    if (bits < 0) return false;
    for (let b = 4; b >= 0; b--) {
      const bit = (bits >> b) & 1;
      if (even) {
        const mid = (lonMin + lonMax) / 2;
        if (bit) lonMin = mid;
        else lonMax = mid;
      } else {
        const mid = (latMin + latMax) / 2;
        if (bit) latMin = mid;
        else latMax = mid;
      }
      even = !even;
    }
  }
  out[0] = (lonMin + lonMax) / 2;
  out[1] = (latMin + latMax) / 2;
  return true;
}

/** A point test prepared once: a bounding box first, the exact test only inside it. */
export type PointTest = ((p: LonLat) => boolean) & { region?: Region };

/** `[minLon, minLat, maxLon, maxLat]`: the area outside which a point test is false. */
export type BBox = [number, number, number, number];

/** What a point test answers for every point of a rectangle: OUT (false), IN (true), or EDGE (it depends). */
export const OUT = 0;
export const IN = 1;
export const EDGE = 2;

/** A point test's geometry, for the spatial index of a rule set. */
export interface Region {
  readonly bbox: BBox;
  /**
   * The point test's answer for each cell of an nx x ny grid of w x h degree cells from (lon0, lat0)
   * (cell (i, j), at index i + j * nx, spans lon0 + i * w to lon0 + (i + 1) * w), each grown by
   * MARGIN: IN or OUT only when it is certain (the same answer, to the last bit, as the test gives
   * every point of the grown cell), EDGE otherwise.
   */
  grid(lon0: number, lat0: number, w: number, h: number, nx: number, ny: number): Uint8Array;
}

/**
 * Degrees a rectangle is grown by before a region classifies it (about 0.1 mm): far beyond the
 * rounding of the coordinates a caller derives a rectangle from, and beyond the rounding of the
 * precise tests themselves.
 */
const MARGIN = 1e-9;

/** Whether the rectangle grown by MARGIN lies wholly inside `b` (true) or wholly outside it (false), or neither (undefined). */
function againstBox(b: BBox, x0: number, y0: number, x1: number, y1: number): boolean | undefined {
  if (x1 + MARGIN < b[0] || x0 - MARGIN > b[2] || y1 + MARGIN < b[1] || y0 - MARGIN > b[3]) return false;
  if (x0 - MARGIN >= b[0] && x1 + MARGIN <= b[2] && y0 - MARGIN >= b[1] && y1 + MARGIN <= b[3]) return true;
  return undefined;
}

export const MAX_POLYGON_POINTS = 25;

/** `inside`/`outside` polygons: `[[lon, lat], ...]`, 3 to 25 points; the ring is closed if it is not. */
export function compilePolygon(value: unknown, property: string): PointTest {
  if (!Array.isArray(value)) throw new RuleCompileError(property, "a polygon is an array of [lon, lat] points");
  if (value.length < 3 || value.length > MAX_POLYGON_POINTS) {
    throw new RuleCompileError(property, `a polygon has 3 to ${MAX_POLYGON_POINTS} points`);
  }
  const ring: LonLat[] = value.map((p: unknown) => {
    if (!Array.isArray(p) || p.length !== 2 || !p.every((n) => typeof n === "number" && Number.isFinite(n))) {
      throw new RuleCompileError(property, "each point is a pair of numbers [lon, lat]");
    }
    const [lon, lat] = p as LonLat;
    if (lon < -180 || lon > 180 || lat < -90 || lat > 90) {
      throw new RuleCompileError(property, "points are [lon, lat] within [-180, 180] and [-90, 90]");
    }
    return [lon, lat];
  });
  const first = ring[0]!;
  const last = ring[ring.length - 1]!;
  if (first[0] !== last[0] || first[1] !== last[1]) ring.push([first[0], first[1]]);
  if (ring.length < 4) throw new RuleCompileError(property, "a polygon needs 3 distinct points");
  let minLon = Infinity;
  let minLat = Infinity;
  let maxLon = -Infinity;
  let maxLat = -Infinity;
  for (const [lon, lat] of ring) {
    if (lon < minLon) minLon = lon;
    if (lon > maxLon) maxLon = lon;
    if (lat < minLat) minLat = lat;
    if (lat > maxLat) maxLat = lat;
  }
  const lons = Float64Array.from(ring, (p) => p[0]);
  const lats = Float64Array.from(ring, (p) => p[1]);
  const test: PointTest = (p) =>
    p[0] >= minLon && p[0] <= maxLon && p[1] >= minLat && p[1] <= maxLat && inRing(lons, lats, p[0], p[1]);
  const bbox: BBox = [minLon, minLat, maxLon, maxLat];
  test.region = { bbox, grid: (...g) => polygonGrid(bbox, lons, lats, ...g) };
  return test;
}

/** Below this (and not 0) a vertex coordinate may differ from a point's by a subnormal amount. */
const TINY = 1e-80;

/**
 * A polygon's answers for a grid (see Region.grid): EDGE where an edge comes within the grown cell,
 * or where a vertex coordinate that is 0 or tiny falls in its span (a point there may differ from
 * the vertex by a subnormal amount, whose products robust orientation does not compute exactly);
 * elsewhere the centre's answer, OUT outside the box. Away from both, every difference inRing takes
 * is 0 or at least about 1e-97, so its orientations are exact, and its answer is that of the ring
 * moved by the rounding of those differences (a few 1e-14 degrees), which a boundary-free cell
 * cannot tell from the ring's own: the same for every point of it. Two neighbouring cells of a row
 * with no boundary overlap once grown and so share their answer: inRing runs once per such run.
 */
function polygonGrid(
  bbox: BBox,
  lons: Float64Array,
  lats: Float64Array,
  lon0: number,
  lat0: number,
  w: number,
  h: number,
  nx: number,
  ny: number,
): Uint8Array {
  const cells = new Uint8Array(nx * ny);
  // Every point of a grown cell is within `reach` of its centre (squared, with a little slack).
  const reach2 = ((w + 2 * MARGIN) ** 2 + (h + 2 * MARGIN) ** 2) * 0.250001;
  const reach = Math.sqrt(reach2);
  const col = (lon: number): number => Math.floor((lon - lon0) / w);
  const row = (lat: number): number => Math.floor((lat - lat0) / h);
  for (let k = 0; k < lons.length; k++) {
    const ax = lons[k]!;
    const ay = lats[k]!;
    // A tiny vertex coordinate: every cell whose grown span holds it (and one either side).
    if (Math.abs(ax) < TINY) {
      for (let i = Math.max(0, col(ax - MARGIN) - 1); i <= Math.min(nx - 1, col(ax + MARGIN) + 1); i++)
        for (let j = 0; j < ny; j++) cells[i + j * nx] = EDGE;
    }
    if (Math.abs(ay) < TINY) {
      for (let j = Math.max(0, row(ay - MARGIN) - 1); j <= Math.min(ny - 1, row(ay + MARGIN) + 1); j++)
        for (let i = 0; i < nx; i++) cells[i + j * nx] = EDGE;
    }
    if (k === 0) continue;
    const bx = lons[k - 1]!;
    const by = lats[k - 1]!;
    const i1 = Math.min(nx - 1, col(Math.max(ax, bx) + reach) + 1);
    const j1 = Math.min(ny - 1, row(Math.max(ay, by) + reach) + 1);
    for (let j = Math.max(0, row(Math.min(ay, by) - reach) - 1); j <= j1; j++) {
      const cy = lat0 + (j + 0.5) * h;
      for (let i = Math.max(0, col(Math.min(ax, bx) - reach) - 1); i <= i1; i++) {
        if (segmentDistance2(lon0 + (i + 0.5) * w, cy, ax, ay, bx, by) <= reach2) cells[i + j * nx] = EDGE;
      }
    }
  }
  for (let j = 0; j < ny; j++) {
    const y0 = lat0 + j * h;
    const y1 = lat0 + (j + 1) * h;
    let answer = -1;
    for (let i = 0; i < nx; i++) {
      const c = i + j * nx;
      if (cells[c] === EDGE) {
        answer = -1;
        continue;
      }
      const x0 = lon0 + i * w;
      const x1 = lon0 + (i + 1) * w;
      const inBox = againstBox(bbox, x0, y0, x1, y1);
      if (answer < 0 && inBox !== false) answer = inRing(lons, lats, (x0 + x1) / 2, (y0 + y1) / 2) ? IN : OUT;
      // Inside the ring is inside its box; the check only keeps IN's promise independent of that argument.
      cells[c] = inBox === false ? OUT : answer === IN && inBox !== true ? EDGE : answer;
    }
  }
  return cells;
}

/** Squared distance from (px, py) to the segment (ax, ay)-(bx, by). */
function segmentDistance2(px: number, py: number, ax: number, ay: number, bx: number, by: number): number {
  const dx = bx - ax;
  const dy = by - ay;
  const len2 = dx * dx + dy * dy;
  let t = len2 > 0 ? ((px - ax) * dx + (py - ay) * dy) / len2 : 0;
  t = t < 0 ? 0 : t > 1 ? 1 : t;
  const ex = px - (ax + t * dx);
  const ey = py - (ay + t * dy);
  return ex * ex + ey * ey;
}

/**
 * Whether (x, y) lies inside the closed ring or on its boundary: turf's booleanPointInPolygon
 * (ignoreBoundary false) over one ring, which is point-in-polygon-hao's crossing count with
 * robust orientation, step for step and so to the last bit, over coordinates in two flat arrays
 * instead of a GeoJSON feature of [lon, lat] pairs (half the time per test).
 */
function inRing(lons: Float64Array, lats: Float64Array, x: number, y: number): boolean {
  let crossings = 0;
  let u1 = lons[0]! - x;
  let v1 = lats[0]! - y;
  for (let i = 1; i < lons.length; i++) {
    const u2 = lons[i]! - x;
    const v2 = lats[i]! - y;
    if (v1 === 0 && v2 === 0) {
      if ((u2 <= 0 && u1 >= 0) || (u1 <= 0 && u2 >= 0)) return true;
    } else if ((v2 >= 0 && v1 <= 0) || (v2 <= 0 && v1 >= 0)) {
      const f = orient2d(u1, u2, v1, v2, 0, 0);
      if (f === 0) return true;
      if ((f > 0 && v2 > 0 && v1 <= 0) || (f < 0 && v2 <= 0 && v1 > 0)) crossings++;
    }
    u1 = u2;
    v1 = v2;
  }
  return crossings % 2 === 1;
}

const METRES_PER_DEGREE_LAT = 111_320;
/** As turf's degreesToRadians, to the last bit. */
const toRad = (d: number): number => ((d % 360) * Math.PI) / 180;
/** turf's earth radius (`earthRadius` in @turf/helpers), so distances equal `distance(..., {units: "meters"})`. */
const EARTH_RADIUS_M = 6371008.8;

/**
 * turf's haversine, inline: no options object and no coordinate checks per
 * call, and the centre's cosine computed once per POI.
 */
function haversineMetres(lat1: number, lon1: number, cosLat1: number, p: LonLat): number {
  const dLat = toRad(p[1] - lat1);
  const dLon = toRad(p[0] - lon1);
  const sLat = Math.sin(dLat / 2);
  const sLon = Math.sin(dLon / 2);
  const a = sLat * sLat + sLon * sLon * cosLat1 * Math.cos(toRad(p[1]));
  return 2 * Math.atan2(Math.sqrt(a), Math.sqrt(1 - a)) * EARTH_RADIUS_M;
}
/** Tolerance at the radius: a point at exactly `radius` is inside, floating point aside. */
const RADIUS_EPSILON_M = 1e-3;

/** `insidePoi`/`outsidePoi` circles: `{center: {lat, lon}, radius}` in metres, distance on the sphere (turf). */
export function compilePoi(value: unknown, property: string): PointTest {
  const poi = value as Partial<Poi> | null;
  if (poi === null || typeof poi !== "object" || typeof poi.center !== "object" || poi.center === null) {
    throw new RuleCompileError(property, "a POI is {center: {lat, lon}, radius}");
  }
  const lat = Number(poi.center.lat);
  const lon = Number(poi.center.lon);
  const radius = Number(poi.radius);
  if (!(lat >= -90 && lat <= 90) || !(lon >= -180 && lon <= 180)) {
    throw new RuleCompileError(property, "center.lat and center.lon must be a valid position");
  }
  if (!(radius > 0) || !Number.isFinite(radius))
    throw new RuleCompileError(property, "radius is a positive number of metres");
  // A box a little larger than the circle; near the poles it spans every longitude.
  const dLat = (radius / METRES_PER_DEGREE_LAT) * 1.01 + 1e-9;
  const cos = Math.cos((lat * Math.PI) / 180);
  const dLon = cos > 0.01 ? dLat / cos : 360;
  const minLat = lat - dLat;
  const maxLat = lat + dLat;
  const minLon = lon - dLon;
  const maxLon = lon + dLon;
  const limit = radius + RADIUS_EPSILON_M;
  const cosLat = Math.cos(toRad(lat));
  const test: PointTest = (p) =>
    p[1] >= minLat &&
    p[1] <= maxLat &&
    p[0] >= minLon &&
    p[0] <= maxLon &&
    haversineMetres(lat, lon, cosLat, p) <= limit;
  const bbox: BBox = [minLon, minLat, maxLon, maxLat];
  test.region = {
    bbox,
    grid(lon0, lat0, w, h, nx, ny) {
      // Every point of a grown cell is within `reach` of its centre (hav d <= hav dLat + hav dLon), so
      // its distance differs from the centre's by at most `reach` (triangle inequality on the sphere).
      const a = Math.min(1, hav(h / 2 + MARGIN) + hav(w / 2 + MARGIN));
      const reach = 2 * Math.asin(Math.sqrt(a)) * EARTH_RADIUS_M * 1.000001;
      // The computed distances' rounding: relative, some 1e-13 of them away from the poles.
      const slack = 0.01 + 1e-8 * (limit + reach);
      const centre: LonLat = [0, 0];
      const cells = new Uint8Array(nx * ny);
      for (let j = 0; j < ny; j++) {
        const y0 = lat0 + j * h;
        const y1 = lat0 + (j + 1) * h;
        for (let i = 0; i < nx; i++) {
          const x0 = lon0 + i * w;
          const x1 = lon0 + (i + 1) * w;
          const inBox = againstBox(bbox, x0, y0, x1, y1);
          let answer = OUT;
          // Near the poles cosines lose their precision and the box leaves the sphere's coordinates.
          if (inBox !== false && !(y0 > -POLAR_LAT && y1 < POLAR_LAT)) answer = EDGE;
          else if (inBox !== false) {
            centre[0] = (x0 + x1) / 2;
            centre[1] = (y0 + y1) / 2;
            const d = haversineMetres(lat, lon, cosLat, centre);
            if (d - reach - slack <= limit) answer = d + reach + slack < limit && inBox === true ? IN : EDGE;
          }
          cells[i + j * nx] = answer;
        }
      }
      return cells;
    },
  };
  return test;
}

const POLAR_LAT = 89;
const hav = (deg: number): number => Math.sin(toRad(deg) / 2) ** 2;
