package dms.peer;

import com.espertech.esper.common.client.EPCompiled;
import com.espertech.esper.common.client.EventBean;
import com.espertech.esper.common.client.configuration.Configuration;
import com.espertech.esper.compiler.client.CompilerArguments;
import com.espertech.esper.compiler.client.EPCompiler;
import com.espertech.esper.compiler.client.EPCompilerProvider;
import com.espertech.esper.runtime.client.DeploymentOptions;
import com.espertech.esper.runtime.client.EPDeployment;
import com.espertech.esper.runtime.client.EPEventService;
import com.espertech.esper.runtime.client.EPRuntime;
import com.espertech.esper.runtime.client.EPRuntimeProvider;
import com.espertech.esper.runtime.client.EPStatement;
import com.espertech.esper.runtime.client.UpdateListener;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.File;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/**
 * bench/engine's JVM peer: {@code java dms.peer.EsperPeer SPEC OBSERVATIONS}. SPEC (written by
 * bench/engine/peer/translate.ts) holds the things and their types, the geofences and one EPL
 * statement per dms rule with its substitution parameters; OBSERVATIONS holds the bench's observation
 * bytes, one JSON document a line. Compiles each distinct statement text once, deploys it once per
 * rule, then times the parse of every line, the thing lookup, the merge into the thing's state and
 * Esper's evaluation, and prints one JSON line of figures on stdout.
 */
public final class EsperPeer {
  private EsperPeer() {}

  /** What dms keeps per thing: the merged state, which thing.state.* and enter/leave read. */
  private static final class ThingState {
    final String type;
    Double temp, hum, press, lat, lon;
    String status;

    ThingState(String type) {
      this.type = type;
    }
  }

  public static void main(String[] argv) throws Exception {
    ObjectMapper mapper = new ObjectMapper();
    JsonNode spec = mapper.readTree(new File(argv[0]));
    byte[] bytes = Files.readAllBytes(Path.of(argv[1]));

    Geo.load(spec);

    Configuration config = new Configuration();
    config.getCommon().addEventType("Obs", Obs.class);
    config.getCompiler().addPlugInSingleRowFunction("inPolygon", Geo.class.getName(), "inPolygon");
    config.getCompiler().addPlugInSingleRowFunction("inPoi", Geo.class.getName(), "inPoi");
    // One thread sends every event and there is no time-based window: no locks, no timer thread.
    config.getRuntime().getThreading().setInternalTimerEnabled(false);
    config.getRuntime().getExecution().setDisableLocking(true);

    long c0 = System.nanoTime();
    EPCompiler compiler = EPCompilerProvider.getCompiler();
    CompilerArguments args = new CompilerArguments(config);
    EPRuntime runtime = EPRuntimeProvider.getRuntime("dms-bench", config);
    long[] triggered = {0};
    UpdateListener count = (newEvents, oldEvents, statement, rt) -> triggered[0] += newEvents.length;
    JsonNode formulation = spec.get("formulation");
    int statements, distinct;
    long c1;
    if (formulation == null || formulation.isNull()) {
      Map<String, EPCompiled> compiled = new HashMap<>();
      for (JsonNode s : spec.get("statements")) {
        String epl = s.get("epl").asText();
        if (!compiled.containsKey(epl)) compiled.put(epl, compiler.compile(epl, args));
      }
      c1 = System.nanoTime();
      deployPerRule(runtime, spec.get("statements"), compiled, count);
      statements = spec.get("statements").size();
      distinct = compiled.size();
    } else {
      EPCompiled module = compiler.compile(formulation.get("module").asText(), args);
      c1 = System.nanoTime();
      EPDeployment d = runtime.getDeploymentService().deploy(module);
      for (EPStatement st : d.getStatements()) if (st.getName().startsWith("fired")) st.addListener(count);
      statements = d.getStatements().length;
      distinct = statements;
      loadRows(runtime.getEventService(), formulation.get("rows"));
    }
    long c2 = System.nanoTime();

    Map<String, ThingState> things = new HashMap<>();
    for (JsonNode t : spec.get("things")) things.put(t.get(0).asText(), new ThingState(t.get(1).asText()));

    EPEventService events = runtime.getEventService();
    ObsJson json = new ObsJson();
    long observations = 0, unknown = 0, halfTriggered = 0;
    long halfAt = 0;
    int lines = 0;
    for (byte b : bytes) if (b == '\n') lines++;
    // CPU time of this thread beside the wall time: the box is shared, and the JIT and GC threads
    // compete with the rest of the machine too.
    ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    long cpu0 = threads.getCurrentThreadCpuTime();
    long t0 = System.nanoTime();
    int start = 0;
    for (int i = 0; i < bytes.length; i++) {
      if (bytes[i] != '\n') continue;
      Obs o = json.parse(bytes, start, i - start);
      start = i + 1;
      ThingState st = o == null ? null : things.get(o.thingName);
      if (st == null) {
        unknown++;
        continue;
      }
      o.thingType = st.type;
      o.prevTemp = st.temp;
      o.prevHum = st.hum;
      o.prevPress = st.press;
      o.prevStatus = st.status;
      o.prevLat = st.lat;
      o.prevLon = st.lon;
      events.sendEventBean(o, "Obs");
      // Merge after evaluation: the next observation's thing.state.
      if (o.temp != null) st.temp = o.temp;
      if (o.hum != null) st.hum = o.hum;
      if (o.press != null) st.press = o.press;
      if (o.status != null) st.status = o.status;
      if (o.lat != null) {
        st.lat = o.lat;
        st.lon = o.lon;
      }
      observations++;
      if (observations == lines / 2) {
        halfAt = System.nanoTime();
        halfTriggered = triggered[0];
      }
    }
    long t1 = System.nanoTime();
    long cpu1 = threads.getCurrentThreadCpuTime();
    Runtime jvm = Runtime.getRuntime();
    System.gc();
    long heap = jvm.totalMemory() - jvm.freeMemory();
    System.out.printf(
        "{\"observations\":%d,\"unknown\":%d,\"seconds\":%.6f,\"cpuSeconds\":%.6f,\"secondHalfSeconds\":%.6f,"
            + "\"triggered\":%d,\"secondHalfTriggered\":%d,\"statements\":%d,\"distinctStatements\":%d,"
            + "\"compileSeconds\":%.3f,\"deploySeconds\":%.3f,\"heapMiB\":%d,\"java\":\"%s\"}%n",
        observations,
        unknown,
        (t1 - t0) / 1e9,
        (cpu1 - cpu0) / 1e9,
        (t1 - halfAt) / 1e9,
        triggered[0],
        triggered[0] - halfTriggered,
        statements,
        distinct,
        (c1 - c0) / 1e9,
        (c2 - c1) / 1e9,
        heap >> 20,
        System.getProperty("java.version"));
    runtime.destroy();
  }

  /** One deployment per rule of its statement's compiled text, the rule's constants as substitution parameters. */
  private static void deployPerRule(
      EPRuntime runtime, JsonNode statements, Map<String, EPCompiled> compiled, UpdateListener count)
      throws Exception {
    for (JsonNode s : statements) {
      DeploymentOptions options = new DeploymentOptions();
      JsonNode params = s.get("params");
      options.setStatementSubstitutionParameter(
          ctx -> {
            for (JsonNode p : params) {
              String name = p.get(0).asText();
              JsonNode v = p.get(2);
              switch (p.get(1).asText()) {
                case "string" -> ctx.setObject(name, v.asText());
                case "int" -> ctx.setObject(name, v.asInt());
                default -> ctx.setObject(name, v.asDouble());
              }
            }
          });
      EPDeployment d = runtime.getDeploymentService().deploy(compiled.get(s.get("epl").asText()), options);
      for (EPStatement st : d.getStatements()) st.addListener(count);
    }
  }

  /** The rules' constants into their tables or named windows, as object-array events of each shape's row type. */
  private static void loadRows(EPEventService events, JsonNode shapes) {
    for (JsonNode shape : shapes) {
      String type = shape.get("eventType").asText();
      JsonNode types = shape.get("types");
      for (JsonNode row : shape.get("rows")) {
        Object[] values = new Object[row.size()];
        for (int i = 0; i < values.length; i++) {
          JsonNode v = row.get(i);
          values[i] =
              switch (types.get(i).asText()) {
                case "string" -> v.asText();
                case "int" -> v.asInt();
                default -> v.asDouble();
              };
        }
        events.sendEventObjectArray(values, type);
      }
    }
  }
}
