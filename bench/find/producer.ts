/**
 * The observation producer of bench/find's hostile phase, in a process of its
 * own: it stands for the devices and gateways that feed the engine through
 * Kafka in production, so that the service's thread does only what it does
 * there (consume, decode, evaluate, store) and `/healthz` measures the service.
 * Told what to do by the parent (`process.send`): produce to `topic` for
 * `seconds`, at `rate` observations a second, or as fast as the broker takes
 * them when `rate` is 0; answers how many it produced.
 */
import { Kafka, logLevel, type Message, type Producer } from "kafkajs";

export interface ProduceJob {
  brokers: string;
  topic: string;
  things: string[];
  /** Observations a second; 0: as fast as the broker acknowledges them. */
  rate: number;
  seconds: number;
  /** Sequence number of the first observation, so that values differ from phase to phase. */
  seq: number;
}

export interface ProduceResult {
  produced: number;
}

/** Messages per produce request at the maximum rate (one request per 10 ms tick at a fixed rate). */
const MAX_BATCH = 2000;
/** Requests in flight at the maximum rate: enough to keep the broker busy while one is acknowledged. */
const IN_FLIGHT = 4;
const TICK_MS = 10;

let producer: Producer | undefined;

async function connected(brokers: string): Promise<Producer> {
  if (producer) return producer;
  const kafka = new Kafka({ clientId: "bench-find-producer", brokers: brokers.split(","), logLevel: logLevel.ERROR });
  producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  return producer;
}

function messages(job: ProduceJob, from: number, count: number): Message[] {
  return Array.from({ length: count }, (_, i) => {
    const k = from + i;
    const thingName = job.things[k % job.things.length]!;
    return { key: thingName, value: JSON.stringify({ thingName, timestamp: Date.now(), state: { temp: k % 40 } }) };
  });
}

async function produce(job: ProduceJob): Promise<ProduceResult> {
  const p = await connected(job.brokers);
  const start = performance.now();
  const until = start + job.seconds * 1000;
  let produced = 0;
  if (job.rate > 0) {
    // Paced by the clock, not by the ticks: a late tick sends what the rate owed since the start.
    while (performance.now() < until) {
      const owed = Math.floor(((performance.now() - start) / 1000) * job.rate) - produced;
      if (owed > 0) {
        await p.send({ topic: job.topic, acks: 1, messages: messages(job, job.seq + produced, owed) });
        produced += owed;
      }
      await new Promise((r) => setTimeout(r, TICK_MS));
    }
  } else {
    const lane = async (): Promise<void> => {
      while (performance.now() < until) {
        const from = job.seq + produced;
        produced += MAX_BATCH;
        await p.send({ topic: job.topic, acks: 1, messages: messages(job, from, MAX_BATCH) });
      }
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
  }
  return { produced };
}

process.on("message", (job: ProduceJob | "close") => {
  if (job === "close") {
    void (producer?.disconnect() ?? Promise.resolve()).then(() => process.exit(0));
    return;
  }
  void produce(job).then((result) => process.send!(result));
});
