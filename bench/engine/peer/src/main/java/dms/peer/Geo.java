package dms.peer;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;

/**
 * Geofences as Esper single-row functions (Esper has no geometry of its own), computed as dms computes
 * them (src/engine/compile/geo.ts): polygons [lon, lat] with a point on the boundary inside, POIs by
 * turf's haversine with turf's earth radius and a 1 mm tolerance, a bounding box first in both.
 * StrictMath is fdlibm, as V8's Math.sin/cos/atan2 are, so a distance is the same double on both sides.
 */
public final class Geo {
  private static final double EARTH_RADIUS_M = 6371008.8;
  private static final double METRES_PER_DEGREE_LAT = 111_320;
  private static final double RADIUS_EPSILON_M = 1e-3;

  private static double[][] polygonLon = new double[0][];
  private static double[][] polygonLat = new double[0][];
  private static double[][] polygonBox = new double[0][];
  private static double[][] pois = new double[0][];

  private Geo() {}

  /** The spec's "polygons" and "pois" (bench/engine/peer/translate.ts's shapes). Set before any observation. */
  public static void load(JsonNode spec) {
    List<List<List<Double>>> polygons = new ArrayList<>();
    for (JsonNode ring : spec.get("polygons")) {
      List<List<Double>> r = new ArrayList<>();
      for (JsonNode p : ring) r.add(List.of(p.get(0).asDouble(), p.get(1).asDouble()));
      polygons.add(r);
    }
    List<List<Double>> pois = new ArrayList<>();
    for (JsonNode p : spec.get("pois")) pois.add(List.of(p.get(0).asDouble(), p.get(1).asDouble(), p.get(2).asDouble()));
    load(polygons, pois);
  }

  /** Polygons as rings of [lon, lat], closed; POIs as [lat, lon, radius]. Set before any statement runs. */
  public static void load(List<List<List<Double>>> polygons, List<List<Double>> poiList) {
    int n = polygons.size();
    polygonLon = new double[n][];
    polygonLat = new double[n][];
    polygonBox = new double[n][];
    for (int i = 0; i < n; i++) {
      List<List<Double>> ring = polygons.get(i);
      double[] xs = new double[ring.size()];
      double[] ys = new double[ring.size()];
      double minLon = Double.POSITIVE_INFINITY, minLat = Double.POSITIVE_INFINITY;
      double maxLon = Double.NEGATIVE_INFINITY, maxLat = Double.NEGATIVE_INFINITY;
      for (int k = 0; k < ring.size(); k++) {
        xs[k] = ring.get(k).get(0);
        ys[k] = ring.get(k).get(1);
        minLon = Math.min(minLon, xs[k]);
        maxLon = Math.max(maxLon, xs[k]);
        minLat = Math.min(minLat, ys[k]);
        maxLat = Math.max(maxLat, ys[k]);
      }
      polygonLon[i] = xs;
      polygonLat[i] = ys;
      polygonBox[i] = new double[] {minLon, minLat, maxLon, maxLat};
    }
    pois = new double[poiList.size()][];
    for (int i = 0; i < pois.length; i++) {
      List<Double> p = poiList.get(i);
      double lat = p.get(0), lon = p.get(1), radius = p.get(2);
      double dLat = (radius / METRES_PER_DEGREE_LAT) * 1.01 + 1e-9;
      double cos = Math.cos((lat * Math.PI) / 180);
      double dLon = cos > 0.01 ? dLat / cos : 360;
      pois[i] =
          new double[] {
            lat, lon, radius + RADIUS_EPSILON_M, StrictMath.cos(toRad(lat)),
            lat - dLat, lat + dLat, lon - dLon, lon + dLon
          };
    }
  }

  /** The point (lon, lat) is inside polygon g or on its boundary; false without a position. */
  public static boolean inPolygon(Double lon, Double lat, int g) {
    if (lon == null || lat == null) return false;
    double x = lon, y = lat;
    double[] box = polygonBox[g];
    if (x < box[0] || x > box[2] || y < box[1] || y > box[3]) return false;
    double[] xs = polygonLon[g], ys = polygonLat[g];
    boolean inside = false;
    for (int i = 0, j = xs.length - 1; i < xs.length; j = i++) {
      double xi = xs[i], yi = ys[i], xj = xs[j], yj = ys[j];
      if (onSegment(x, y, xi, yi, xj, yj)) return true;
      if ((yi > y) != (yj > y) && x < ((xj - xi) * (y - yi)) / (yj - yi) + xi) inside = !inside;
    }
    return inside;
  }

  /** The point (lon, lat) is within POI g's radius (great-circle metres); false without a position. */
  public static boolean inPoi(Double lon, Double lat, int g) {
    if (lon == null || lat == null) return false;
    double[] p = pois[g];
    double y = lat, x = lon;
    if (y < p[4] || y > p[5] || x < p[6] || x > p[7]) return false;
    double dLat = toRad(y - p[0]);
    double dLon = toRad(x - p[1]);
    double sLat = StrictMath.sin(dLat / 2);
    double sLon = StrictMath.sin(dLon / 2);
    double a = sLat * sLat + sLon * sLon * p[3] * StrictMath.cos(toRad(y));
    return 2 * StrictMath.atan2(Math.sqrt(a), Math.sqrt(1 - a)) * EARTH_RADIUS_M <= p[2];
  }

  private static boolean onSegment(double x, double y, double x1, double y1, double x2, double y2) {
    double cross = (y - y1) * (x2 - x1) - (x - x1) * (y2 - y1);
    return cross == 0
        && x >= Math.min(x1, x2)
        && x <= Math.max(x1, x2)
        && y >= Math.min(y1, y2)
        && y <= Math.max(y1, y2);
  }

  /** As turf's degreesToRadians, to the last bit. */
  private static double toRad(double d) {
    return ((d % 360) * Math.PI) / 180;
  }
}
