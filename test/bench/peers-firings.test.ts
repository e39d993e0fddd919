import { randomUUID } from "node:crypto";
import { Kafka, logLevel } from "kafkajs";
import { describe, expect, it } from "vitest";
import { runPeer } from "../../bench/engine/peer/index.js";
import { FORMULATIONS } from "../../bench/engine/peer/formulations.js";
import { Encoded, memoryEngine, workload } from "../../bench/engine/workload.js";
import { runStreams, STREAMS_RUNS } from "../../bench/kafka/streams/index.js";
import { decodeMessages } from "../../src/engine/index.js";
import { createTopic, startKafka } from "../support/kafka.js";

// A small workload where runs reach the threshold: 4 types x 20 things, 100 rules a type, 150 observations a thing.
const w = workload({ types: 4, thingsPerType: 20 });
const N = 12_000;
const data = new Encoded(w, N);

function dmsFirings(): number {
  const engine = memoryEngine(w, w.rules);
  let triggered = 0;
  for (let start = 0; start < N; start += 500)
    triggered += engine.process(decodeMessages(data.chunk(start, start + 500))).triggered;
  return triggered;
}

describe("the JVM peers fire as dms does on the same observations", () => {
  const expected = dmsFirings();

  it("has a workload that fires", () => {
    expect(expected).toBeGreaterThan(5);
  });

  it.each(FORMULATIONS)(
    "Esper, formulated as %s",
    async (formulation) => {
      const r = await runPeer({ rules: w.rules, things: w.things, messages: data.messages(N), formulation });
      if ("skipped" in r) throw new Error(r.skipped);
      expect(r.observations).toBe(N);
      expect(r.triggered).toBe(expected);
    },
    300_000,
  );

  it("Kafka Streams, each store and thread count, through a 6-partition topic", async () => {
    const brokers = await startKafka();
    const topic = `peers-${randomUUID().slice(0, 8)}`;
    await createTopic(brokers, topic, 6);
    const producer = new Kafka({ brokers: brokers.split(","), logLevel: logLevel.NOTHING }).producer();
    await producer.connect();
    await producer.send({
      topic,
      messages: [...data.messages(N)].map((value, i) => ({ key: w.thingOf(i), value })),
    });
    await producer.disconnect();
    for (const run of STREAMS_RUNS) {
      const r = await runStreams({ brokers, topic, observations: N, rules: w.rules, things: w.things, ...run });
      if ("skipped" in r) throw new Error(r.skipped);
      expect({ ...run, observations: r.observations, triggered: r.triggered }).toEqual({
        ...run,
        observations: N,
        triggered: expected,
      });
    }
  }, 600_000);
});
