package dms.streams;

import dms.peer.Obs;
import dms.peer.ObsJson;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * The bench's rules over one task's observations: the thing's record from the store, every rule of its
 * type evaluated against the observation and the state before it, the runs counted (a match extends a
 * run and fires it at the threshold, then a fresh start; a miss ends it), the observation merged, the
 * record put back. Firings are counted, not forwarded, as dms's bench hands its actions to a sink that
 * drops them.
 */
final class RuleProcessor implements Processor<byte[], byte[], Void, Void> {
  private final Rules rules;
  private final Progress progress;
  private final ObsJson json = new ObsJson();
  private KeyValueStore<String, ThingRecord> store;

  /** Shared by every task of the application: what the harness reads. */
  static final class Progress {
    final long target;
    final AtomicLong processed = new AtomicLong();
    final AtomicLong triggered = new AtomicLong();
    final AtomicLong unknown = new AtomicLong();
    volatile long firstNanos;
    volatile long lastNanos;

    Progress(long target) {
      this.target = target;
    }

    boolean done() {
      return processed.get() >= target;
    }
  }

  RuleProcessor(Rules rules, Progress progress) {
    this.rules = rules;
    this.progress = progress;
  }

  @Override
  public void init(ProcessorContext<Void, Void> context) {
    store = context.getStateStore(StreamsPeer.STORE);
    // Once every observation is in, each task asks for a commit rather than waiting out the
    // interval, as dms's bench checkpoints once at the end.
    context.schedule(
        Duration.ofMillis(50),
        PunctuationType.WALL_CLOCK_TIME,
        now -> {
          if (progress.done()) context.commit();
        });
  }

  @Override
  public void process(Record<byte[], byte[]> record) {
    if (progress.firstNanos == 0) progress.firstNanos = System.nanoTime();
    try {
      evaluate(record.value());
    } catch (java.io.IOException e) {
      progress.unknown.incrementAndGet();
    }
    progress.lastNanos = System.nanoTime();
    progress.processed.incrementAndGet();
  }

  private void evaluate(byte[] value) throws java.io.IOException {
    Obs o = value == null ? null : json.parse(value, 0, value.length);
    String type = o == null ? null : rules.typeOf.get(o.getThingName());
    Rules.Rule[] typeRules = type == null ? null : rules.byType.get(type);
    if (typeRules == null) {
      progress.unknown.incrementAndGet();
      return;
    }
    ThingRecord r = store.get(o.getThingName());
    if (r == null) r = new ThingRecord(typeRules.length);
    long fired = 0;
    for (int i = 0; i < typeRules.length; i++) {
      Rules.Rule rule = typeRules[i];
      if (!rule.carried(o)) continue;
      if (!rule.matches(o, r)) r.counts[i] = 0;
      else if (++r.counts[i] >= rule.count()) {
        r.counts[i] = 0;
        fired++;
      }
    }
    if (fired > 0) progress.triggered.addAndGet(fired);
    r.merge(o);
    store.put(o.getThingName(), r);
  }
}
