package dms.streams;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.File;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.state.KeyValueBytesStoreSupplier;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.Stores;

/**
 * bench/kafka's Kafka Streams peer:
 * {@code java dms.streams.StreamsPeer SPEC BROKERS TOPIC OBSERVATIONS memory|durable THREADS STATE_DIR}.
 * Reads the bench's pre-loaded topic from the beginning as a fresh application, evaluates the rules
 * of SPEC (bench/kafka/streams/rules.ts) per thing in a key-value store keyed by thing, and prints one
 * JSON line of figures: from the first record processed to the last (in memory) or to the offsets of
 * every observation being committed, which in Streams follows the store's flush and its changelog's
 * writes (durable).
 */
public final class StreamsPeer {
  static final String STORE = "things";
  /** As dms's engine checkpoints its state (DMS_ENGINE_CHECKPOINT_MS's default). */
  static final long COMMIT_INTERVAL_MS = 5000;

  private StreamsPeer() {}

  /** The whole application: the topic, the rule processor and its store. */
  static Topology topology(String topic, Rules rules, RuleProcessor.Progress progress, boolean durable) {
    KeyValueBytesStoreSupplier supplier =
        durable ? Stores.persistentKeyValueStore(STORE) : Stores.inMemoryKeyValueStore(STORE);
    StoreBuilder<KeyValueStore<String, ThingRecord>> store =
        Stores.keyValueStoreBuilder(supplier, Serdes.String(), ThingRecord.SERDE).withCachingEnabled();
    // In memory as dms's in-memory engine: nothing to restore, so no changelog either.
    if (!durable) store = store.withLoggingDisabled();
    Topology t = new Topology();
    t.addSource("observations", Serdes.ByteArray().deserializer(), Serdes.ByteArray().deserializer(), topic);
    t.addProcessor("rules", () -> new RuleProcessor(rules, progress), "observations");
    t.addStateStore(store, "rules");
    return t;
  }

  public static void main(String[] argv) throws Exception {
    JsonNode spec = new ObjectMapper().readTree(new File(argv[0]));
    String brokers = argv[1], topic = argv[2];
    long n = Long.parseLong(argv[3]);
    boolean durable = argv[4].equals("durable");
    int threads = Integer.parseInt(argv[5]);
    String app = "dms-bench-streams-" + java.util.UUID.randomUUID();

    Properties p = new Properties();
    p.put(StreamsConfig.APPLICATION_ID_CONFIG, app);
    p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
    p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, threads);
    p.put(StreamsConfig.STATE_DIR_CONFIG, argv[6]);
    p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, COMMIT_INTERVAL_MS);
    p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.AT_LEAST_ONCE);
    // Room for every thing's record between commits, so the store sees one write per thing per commit.
    p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 64L * 1024 * 1024);
    p.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
    p.put(StreamsConfig.consumerPrefix(ConsumerConfig.MAX_POLL_RECORDS_CONFIG), 2000);
    p.put(StreamsConfig.consumerPrefix(ConsumerConfig.FETCH_MAX_BYTES_CONFIG), 10 * 1024 * 1024);
    p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);

    Rules rules = new Rules(spec);
    RuleProcessor.Progress progress = new RuleProcessor.Progress(n);
    KafkaStreams streams = new KafkaStreams(topology(topic, rules, progress, durable), p);
    streams.setUncaughtExceptionHandler(
        e -> {
          e.printStackTrace();
          System.exit(2);
          return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
    long cpu0 = processCpuNanos();
    streams.start();
    long end;
    try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, brokers))) {
      while (!progress.done()) Thread.sleep(10);
      end = progress.lastNanos;
      if (durable) {
        while (committed(admin, app, topic) < n) Thread.sleep(10);
        end = System.nanoTime();
      }
    }
    long cpu1 = processCpuNanos();
    streams.close();
    streams.cleanUp();
    System.out.printf(
        "{\"observations\":%d,\"unknown\":%d,\"seconds\":%.6f,\"cpuSeconds\":%.6f,\"triggered\":%d,\"java\":\"%s\"}%n",
        progress.processed.get(),
        progress.unknown.get(),
        (end - progress.firstNanos) / 1e9,
        (cpu1 - cpu0) / 1e9,
        progress.triggered.get(),
        System.getProperty("java.version"));
    System.exit(0);
  }

  /** The observations whose offsets the application has committed, over the topic's partitions. */
  private static long committed(Admin admin, String group, String topic) throws Exception {
    long sum = 0;
    for (Map.Entry<TopicPartition, OffsetAndMetadata> e :
        admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get().entrySet()) {
      if (e.getKey().topic().equals(topic) && e.getValue() != null) sum += e.getValue().offset();
    }
    return sum;
  }

  private static long processCpuNanos() {
    return ((com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory.getOperatingSystemMXBean())
        .getProcessCpuTime();
  }
}
