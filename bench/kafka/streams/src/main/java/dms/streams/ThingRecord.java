package dms.streams;

import dms.peer.Obs;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.Serializer;

/**
 * What the store keeps per thing: its merged state (thing.state.* and the previous position) and the
 * run of consecutive matches of each of its type's rules, one value per thing so an observation is one
 * get and one put. Serialized as fixed fields (NaN for a resource never seen) and the counts.
 */
final class ThingRecord {
  Double temp, hum, press, lat, lon;
  String status;
  final int[] counts;

  ThingRecord(int rules) {
    counts = new int[rules];
  }

  Double number(int field) {
    return switch (field) {
      case Rules.TEMP -> temp;
      case Rules.HUM -> hum;
      case Rules.PRESS -> press;
      default -> null;
    };
  }

  /** The observation merged into the state: the next observation's thing.state. */
  void merge(Obs o) {
    if (o.getTemp() != null) temp = o.getTemp();
    if (o.getHum() != null) hum = o.getHum();
    if (o.getPress() != null) press = o.getPress();
    if (o.getStatus() != null) status = o.getStatus();
    if (o.getLat() != null) {
      lat = o.getLat();
      lon = o.getLon();
    }
  }

  static final Serde<ThingRecord> SERDE = Serdes.serdeFrom(new Write(), new Read());

  private static double put(Double d) {
    return d == null ? Double.NaN : d;
  }

  private static Double get(double d) {
    return Double.isNaN(d) ? null : d;
  }

  private static final class Write implements Serializer<ThingRecord> {
    @Override
    public byte[] serialize(String topic, ThingRecord r) {
      byte[] status = r.status == null ? new byte[0] : r.status.getBytes(StandardCharsets.UTF_8);
      ByteBuffer b = ByteBuffer.allocate(5 * 8 + 4 + status.length + 4 + 4 * r.counts.length);
      b.putDouble(put(r.temp)).putDouble(put(r.hum)).putDouble(put(r.press)).putDouble(put(r.lat)).putDouble(put(r.lon));
      b.putInt(r.status == null ? -1 : status.length).put(status);
      b.putInt(r.counts.length);
      for (int c : r.counts) b.putInt(c);
      return b.array();
    }
  }

  private static final class Read implements Deserializer<ThingRecord> {
    @Override
    public ThingRecord deserialize(String topic, byte[] data) {
      if (data == null) return null;
      ByteBuffer b = ByteBuffer.wrap(data);
      Double temp = get(b.getDouble()), hum = get(b.getDouble()), press = get(b.getDouble());
      Double lat = get(b.getDouble()), lon = get(b.getDouble());
      int len = b.getInt();
      String status = null;
      if (len >= 0) {
        status = new String(data, b.position(), len, StandardCharsets.UTF_8);
        b.position(b.position() + len);
      }
      ThingRecord r = new ThingRecord(b.getInt());
      for (int i = 0; i < r.counts.length; i++) r.counts[i] = b.getInt();
      r.temp = temp;
      r.hum = hum;
      r.press = press;
      r.lat = lat;
      r.lon = lon;
      r.status = status;
      return r;
    }
  }
}
