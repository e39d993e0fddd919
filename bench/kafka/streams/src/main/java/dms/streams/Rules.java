package dms.streams;

import com.fasterxml.jackson.databind.JsonNode;
import dms.peer.Geo;
import dms.peer.Obs;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The bench's rules as the Streams peer evaluates them (bench/kafka/streams/rules.ts writes them): per
 * thing type, its rules in a fixed order, so a thing's threshold counts are an array indexed as its
 * type's rules are. Conditions read the observation and the thing's merged state before it.
 */
final class Rules {
  static final int TEMP = 0, HUM = 1, PRESS = 2, STATUS = 3, POSITION = 4;

  /** One condition: compare a resource with a constant, a linear expression, or a geofence. */
  record Condition(
      String op, int field, Double constant, String string, boolean prevScope, int exprField, double mul, double add,
      int geo, boolean poi) {

    boolean matches(Obs o, ThingRecord prev) {
      if (field == POSITION) return geofence(o, prev);
      if (field == STATUS) {
        if (o.getStatus() == null) return false;
        boolean eq = o.getStatus().equals(string);
        return op.equals("eq") ? eq : op.equals("ne") && !eq;
      }
      Double v = number(o, field);
      if (v == null) return false;
      double c;
      if (constant != null) c = constant;
      else {
        Double x = prevScope ? prev.number(exprField) : number(o, exprField);
        if (x == null) return false;
        c = x * mul + add;
      }
      return switch (op) {
        case "gt" -> v > c;
        case "gte" -> v >= c;
        case "lt" -> v < c;
        case "lte" -> v <= c;
        case "eq" -> v == c;
        case "ne" -> v != c;
        default -> false;
      };
    }

    private boolean geofence(Obs o, ThingRecord prev) {
      boolean hasCur = o.getLat() != null;
      boolean cur = poi ? Geo.inPoi(o.getLon(), o.getLat(), geo) : Geo.inPolygon(o.getLon(), o.getLat(), geo);
      switch (op.replace("Poi", "")) {
        case "inside":
          return cur;
        case "outside":
          return hasCur && !cur;
        default:
          break;
      }
      if (!hasCur || prev.lat == null) return false;
      boolean was = poi ? Geo.inPoi(prev.lon, prev.lat, geo) : Geo.inPolygon(prev.lon, prev.lat, geo);
      return op.startsWith("enter") ? cur && !was : !cur && was;
    }
  }

  record Rule(String id, int count, Condition[] conditions, boolean[] resources) {
    /** The observation carries one of the rule's resources: otherwise it neither matches nor resets (as in dms). */
    boolean carried(Obs o) {
      for (int f = 0; f < resources.length; f++) if (resources[f] && present(o, f)) return true;
      return false;
    }

    boolean matches(Obs o, ThingRecord prev) {
      for (Condition c : conditions) if (!c.matches(o, prev)) return false;
      return true;
    }
  }

  final Map<String, String> typeOf = new HashMap<>();
  final Map<String, Rule[]> byType = new HashMap<>();

  Rules(JsonNode spec) {
    Geo.load(spec);
    for (JsonNode t : spec.get("things")) typeOf.put(t.get(0).asText(), t.get(1).asText());
    Map<String, List<Rule>> rules = new HashMap<>();
    for (JsonNode r : spec.get("rules")) {
      List<Condition> conditions = new ArrayList<>();
      boolean[] resources = new boolean[5];
      for (JsonNode c : r.get("conditions")) {
        int field = c.get("field").asInt();
        resources[field] = true;
        conditions.add(
            new Condition(
                c.get("op").asText(),
                field,
                c.has("number") ? c.get("number").asDouble() : null,
                c.has("string") ? c.get("string").asText() : null,
                c.path("prev").asBoolean(false),
                c.path("exprField").asInt(-1),
                c.path("mul").asDouble(1),
                c.path("add").asDouble(0),
                c.path("geo").asInt(-1),
                c.path("poi").asBoolean(false)));
      }
      rules
          .computeIfAbsent(r.get("type").asText(), k -> new ArrayList<>())
          .add(new Rule(r.get("id").asText(), r.get("count").asInt(), conditions.toArray(new Condition[0]), resources));
    }
    rules.forEach((type, list) -> byType.put(type, list.toArray(new Rule[0])));
  }

  static boolean present(Obs o, int field) {
    return switch (field) {
      case STATUS -> o.getStatus() != null;
      case POSITION -> o.getLat() != null;
      default -> number(o, field) != null;
    };
  }

  static Double number(Obs o, int field) {
    return switch (field) {
      case TEMP -> o.getTemp();
      case HUM -> o.getHum();
      case PRESS -> o.getPress();
      default -> null;
    };
  }
}
