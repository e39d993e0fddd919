/** A thing's track and the rules' geofences and POIs on a plain equirectangular projection: no tiles. */
import type { Point, Shape } from "./geo.js";

const WIDTH = 640;
const HEIGHT = 360;
const PAD = 20;
const METERS_PER_DEGREE = 111_320;

export function TrackMap({ track, shapes }: { track: Point[]; shapes: Shape[] }) {
  const all: Point[] = [...track];
  for (const s of shapes) {
    if (s.kind === "polygon") all.push(...s.points);
    else {
      const dLat = s.radiusMeters / METERS_PER_DEGREE;
      const dLon = dLat / Math.max(0.01, Math.cos((s.center.lat * Math.PI) / 180));
      all.push(
        { lat: s.center.lat - dLat, lon: s.center.lon - dLon },
        { lat: s.center.lat + dLat, lon: s.center.lon + dLon },
      );
    }
  }
  if (all.length === 0) return <p class="muted">No positions in this window and no geofences.</p>;
  let minLat = Infinity,
    maxLat = -Infinity,
    minLon = Infinity,
    maxLon = -Infinity;
  for (const p of all) {
    minLat = Math.min(minLat, p.lat);
    maxLat = Math.max(maxLat, p.lat);
    minLon = Math.min(minLon, p.lon);
    maxLon = Math.max(maxLon, p.lon);
  }
  // Longitudes shrink with latitude: scale them so that shapes keep their proportions.
  const cosLat = Math.max(0.01, Math.cos((((minLat + maxLat) / 2) * Math.PI) / 180));
  const spanX = Math.max(1e-6, (maxLon - minLon) * cosLat);
  const spanY = Math.max(1e-6, maxLat - minLat);
  const scale = Math.min((WIDTH - 2 * PAD) / spanX, (HEIGHT - 2 * PAD) / spanY);
  const x = (p: Point): number => PAD + (p.lon - minLon) * cosLat * scale;
  const y = (p: Point): number => HEIGHT - PAD - (p.lat - minLat) * scale;
  const path = track.map((p) => `${x(p).toFixed(1)},${y(p).toFixed(1)}`).join(" ");
  const last = track[track.length - 1];
  return (
    <svg
      class="map"
      viewBox={`0 0 ${WIDTH} ${HEIGHT}`}
      role="img"
      aria-label={`Track of ${track.length} positions and ${shapes.length} geofences`}
    >
      <rect width={WIDTH} height={HEIGHT} class="map-bg" />
      {shapes.map((s, i) =>
        s.kind === "polygon" ? (
          <polygon key={i} class="fence" points={s.points.map((p) => `${x(p)},${y(p)}`).join(" ")}>
            <title>{`${s.ruleName}: ${s.operator}`}</title>
          </polygon>
        ) : (
          <circle
            key={i}
            class="poi"
            cx={x(s.center)}
            cy={y(s.center)}
            r={Math.max(3, (s.radiusMeters / METERS_PER_DEGREE) * scale)}
          >
            <title>{`${s.ruleName}: ${s.operator}`}</title>
          </circle>
        ),
      )}
      {track.length > 1 && <polyline class="track" points={path} />}
      {last && (
        <circle class="here" cx={x(last)} cy={y(last)} r={5}>
          <title>latest position</title>
        </circle>
      )}
    </svg>
  );
}
