package dms.peer;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;

/**
 * One observation's bytes as dms's decode reads them: thingName and the state's resources; latlng
 * "lat,lon" into two numbers. Shared by bench/engine's Esper peer and bench/kafka's Streams peer.
 */
public final class ObsJson {
  private final JsonFactory json = new JsonFactory();

  /** The observation, or null for bytes that are not an object with a thingName. */
  public Obs parse(byte[] bytes, int offset, int length) throws IOException {
    Obs o = new Obs();
    try (JsonParser p = json.createParser(bytes, offset, length)) {
      if (p.nextToken() != JsonToken.START_OBJECT) return null;
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        String field = p.currentName();
        JsonToken t = p.nextToken();
        if (field.equals("thingName") && t == JsonToken.VALUE_STRING) o.thingName = p.getText();
        else if (field.equals("state") && t == JsonToken.START_OBJECT) readState(p, o);
        else p.skipChildren();
      }
    }
    return o.thingName == null ? null : o;
  }

  private static void readState(JsonParser p, Obs o) throws IOException {
    while (p.nextToken() == JsonToken.FIELD_NAME) {
      String name = p.currentName();
      JsonToken t = p.nextToken();
      switch (name) {
        case "temp" -> o.temp = number(p, t);
        case "hum" -> o.hum = number(p, t);
        case "press" -> o.press = number(p, t);
        case "status" -> o.status = t == JsonToken.VALUE_STRING ? p.getText() : null;
        case "latlng" -> {
          if (t == JsonToken.VALUE_STRING) {
            String s = p.getText();
            int comma = s.indexOf(',');
            if (comma > 0) {
              o.lat = Double.parseDouble(s.substring(0, comma));
              o.lon = Double.parseDouble(s.substring(comma + 1));
            }
          }
        }
        default -> p.skipChildren();
      }
    }
  }

  private static Double number(JsonParser p, JsonToken t) throws IOException {
    return t == JsonToken.VALUE_NUMBER_INT || t == JsonToken.VALUE_NUMBER_FLOAT ? p.getDoubleValue() : null;
  }
}
