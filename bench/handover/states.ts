import { Partitioners, type PartitionMetadata } from "kafkajs";
import type { ThingState, ThresholdState } from "../../src/engine/index.js";
import { rng, STATUSES, WORKLOAD_EPOCH_MS } from "../engine/workload.js";

/** The observations topic the states' `lastSource` names, as the Kafka source writes it. */
export const OBSERVATIONS_SOURCE = "kafka:observations";

/** The engine's state of a fleet of things, each with the partition of the observations topic its key goes to. */
export interface Fleet {
  states: ThingState[];
  /** `partitionOf[i]` is the partition of `states[i]`. */
  partitionOf: number[];
  partitions: number;
}

/** The `lastSource` of the things of observations partition `p`. */
export const sourceOf = (p: number): string => `${OBSERVATIONS_SOURCE}:${p}`;

/**
 * `count` things named as bench/engine's workload names them (100 thing types), each in the state
 * the engine leaves after some observations: the workload's five resources, a Kafka position, three
 * live threshold entries (counts going on, a recent firing) and one inert spare the stores leave out.
 * Partitioned by key with the producer's default partitioner, as the observations topic is.
 */
export function fleet(count: number, partitions: number, seed = 42): Fleet {
  const r = rng(seed);
  const partition = keyPartitioner(partitions);
  const states: ThingState[] = [];
  const partitionOf: number[] = [];
  const types = 100;
  for (let i = 0; i < count; i++) {
    const type = `T${i % types}`;
    const thingName = `${type}-${Math.floor(i / types)}`;
    const p = partition(thingName);
    const seq = 10 + Math.floor(r() * 1000);
    const thresholds: ThresholdState[] = [];
    for (let k = 0; k < 3; k++)
      thresholds.push({
        ruleId: `${type}-r${Math.floor(r() * 100)}`,
        count: k === 2 ? 0 : 1 + Math.floor(r() * 2),
        lastFiredAt: k === 2 ? WORKLOAD_EPOCH_MS - Math.floor(r() * 60_000) : 0,
        lastSeq: seq - k,
        version: 1,
      });
    thresholds.push({ ruleId: `${type}-r99`, count: 0, lastFiredAt: 0 });
    states.push({
      thingName,
      timestamp: WORKLOAD_EPOCH_MS + i,
      state: observedState(r),
      seq,
      lastSource: sourceOf(p),
      lastOffset: Math.floor(r() * 1_000_000),
      thresholds,
    });
    partitionOf.push(p);
  }
  return { states, partitionOf, partitions };
}

/** Another observation of each thing: new resource values, its sequence and offset on, a count moved. */
export function observeAgain(things: readonly ThingState[], r: () => number): void {
  for (const t of things) {
    t.timestamp += 5_000;
    t.seq = (t.seq ?? 0) + 1;
    t.lastOffset = (t.lastOffset ?? 0) + 1 + Math.floor(r() * 50);
    t.state = observedState(r);
    const live = t.thresholds?.[0];
    if (live) {
      live.count = (live.count % 2) + 1;
      live.lastSeq = t.seq;
    }
  }
}

function observedState(r: () => number): Record<string, unknown> {
  const lat = (59 + r()).toFixed(5);
  const lon = (10 + r()).toFixed(5);
  return {
    temp: Math.floor(r() * 1000),
    hum: Math.floor(r() * 1000),
    press: Math.floor(r() * 1000),
    status: STATUSES[Math.floor(r() * STATUSES.length)],
    latlng: `${lat},${lon}`,
  };
}

/** The partition a key goes to with kafkajs's default (Java-compatible murmur2) partitioner. */
function keyPartitioner(partitions: number): (key: string) => number {
  const partitioner = Partitioners.DefaultPartitioner();
  const partitionMetadata: PartitionMetadata[] = Array.from({ length: partitions }, (_, partitionId) => ({
    partitionErrorCode: 0,
    partitionId,
    leader: 1,
    replicas: [1],
    isr: [1],
  }));
  return (key) => partitioner({ topic: "observations", partitionMetadata, message: { key, value: null } });
}
