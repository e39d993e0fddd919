import { randomUUID } from "node:crypto";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import kafkajs, {
  AssignerProtocol,
  CompressionTypes,
  type Admin,
  type Kafka,
  type Message,
  type PartitionAssigner,
  type Producer,
} from "kafkajs";
import type { ThingState } from "../../src/engine/index.js";
import { fromRow, stateDoc } from "../../src/engine/state/doc.js";

/** Not among the names Node finds in kafkajs's CommonJS exports: taken from its default export. */
const { ConfigResourceTypes } = kafkajs;

/**
 * No compression: kafkajs ships only gzip, lz4 needs a codec package dms does not depend on, and
 * compressing costs the engine's process CPU where the broker's disk is not what is short.
 */
export const CHANGELOG_COMPRESSION = CompressionTypes.None;
export const CHANGELOG_COMPRESSION_NAME = "none";

/**
 * Records a produce request carries: a checkpoint's records are sent as several requests in flight
 * together, so that no partition's batch reaches the broker's default `message.max.bytes` (1 MiB).
 */
export const RECORDS_PER_SEND = 2_000;

/**
 * A thing's changelog record value: its row's columns as a JSON array, a newline, then the
 * document the state tables hold (`stateDoc`), so a restore reads it with `fromRow` as they do.
 */
export function changelogValue(t: ThingState): string {
  return `${JSON.stringify([t.timestamp, t.seq ?? 0, t.lastSource ?? null, t.lastOffset ?? null])}\n${stateDoc(t)}`;
}

/** The state a changelog record holds (the key is the thing's name). */
export function fromChangelog(thingName: string, value: Buffer): ThingState {
  const text = value.toString("utf8");
  const cut = text.indexOf("\n");
  const [ts, seq, lastSource, lastOffset] = JSON.parse(text.slice(0, cut)) as [
    number,
    number,
    string | null,
    number | null,
  ];
  return fromRow({
    thing_name: thingName,
    ts,
    seq,
    last_source: lastSource,
    last_offset: lastOffset,
    doc: text.slice(cut + 1),
  });
}

/** The partition of the observations topic a state's last observation came from (`<source>:<partition>`). */
function partitionOf(t: ThingState): number {
  const source = t.lastSource ?? "";
  return Number(source.slice(source.lastIndexOf(":") + 1));
}

/** A compacted topic keyed by thing name, partitioned as the observations topic. */
export async function createChangelogTopic(admin: Admin, topic: string, partitions: number): Promise<void> {
  await admin.createTopics({
    topics: [
      {
        topic,
        numPartitions: partitions,
        replicationFactor: 1,
        configEntries: [{ name: "cleanup.policy", value: "compact" }],
      },
    ],
    waitForLeaders: true,
  });
}

/**
 * The checkpoint of a changelog store: each changed state produced to its thing's partition,
 * acknowledged by every in-sync replica (acks all), in the order flushes are made.
 */
export class ChangelogWriter {
  private written: Promise<void> = Promise.resolve();
  /** Bytes of the keys and values produced. */
  bytes = 0;

  constructor(
    private readonly producer: Producer,
    private readonly topic: string,
  ) {}

  flush(changed: readonly ThingState[]): Promise<void> {
    const sends: Message[][] = [];
    for (let from = 0; from < changed.length; from += RECORDS_PER_SEND) {
      const messages: Message[] = [];
      for (let i = from; i < Math.min(changed.length, from + RECORDS_PER_SEND); i++) {
        const t = changed[i]!;
        const value = changelogValue(t);
        this.bytes += t.thingName.length + value.length;
        messages.push({ key: t.thingName, value, partition: partitionOf(t) });
      }
      sends.push(messages);
    }
    const writing = this.written
      .catch(() => undefined)
      .then(async () => {
        await Promise.all(
          sends.map((messages) =>
            this.producer.send({ topic: this.topic, messages, acks: -1, compression: CHANGELOG_COMPRESSION }),
          ),
        );
      });
    this.written = writing;
    return writing;
  }
}

/** The Kafka source's fetch sizes (src/engine/sources/kafka-loop.ts). */
const RESTORE_FETCH = { maxBytes: 10 * 1024 * 1024, maxBytesPerPartition: 10 * 1024 * 1024 };

/** A restore's result: the states read, and how many records it took. */
export interface Restored {
  states: Map<string, ThingState>;
  records: number;
  /** From the start until the group handed the partitions over. */
  joinMs: number;
  /** Leaves the group (not part of the hand-over). */
  close(): Promise<void>;
}

/**
 * The new owner's restore: reads the changelog's `partitions` from the beginning to the end offsets
 * they had when it started, the last record of a thing winning, then parses each state once.
 * kafkajs cannot assign partitions without a group, so the restore consumer joins a group of its own
 * whose assigner hands it just those partitions.
 */
export async function restoreChangelog(
  kafka: Kafka,
  admin: Admin,
  topic: string,
  partitions: readonly number[],
  fetch: { maxBytes: number; maxBytesPerPartition: number } = RESTORE_FETCH,
): Promise<Restored> {
  const started = performance.now();
  const ends = new Map<number, number>();
  for (const o of await admin.fetchTopicOffsets(topic))
    if (partitions.includes(o.partition)) ends.set(o.partition, Number(o.high));
  const pending = new Set([...ends].filter(([, end]) => end > 0).map(([p]) => p));
  const latest = new Map<string, Buffer | null>();
  let records = 0;
  let joinMs = 0;
  const consumer = kafka.consumer({
    groupId: `bench-restore-${randomUUID()}`,
    partitionAssigners: [onlyPartitions(topic, partitions)],
    ...fetch,
    maxWaitTimeInMs: 100,
  });
  consumer.on(consumer.events.GROUP_JOIN, () => (joinMs = performance.now() - started));
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  if (pending.size > 0)
    await new Promise<void>((resolve, reject) => {
      consumer
        .run({
          autoCommit: false,
          eachBatch: async ({ batch }) => {
            const end = ends.get(batch.partition)!;
            for (const m of batch.messages) {
              records++;
              latest.set(m.key!.toString("utf8"), m.value);
              if (Number(m.offset) >= end - 1) pending.delete(batch.partition);
            }
            if (pending.size === 0) resolve();
          },
        })
        .catch(reject);
    });
  const states = new Map<string, ThingState>();
  for (const [thingName, value] of latest) if (value !== null) states.set(thingName, fromChangelog(thingName, value));
  return { states, records, joinMs, close: () => consumer.disconnect() };
}

/** An assigner that gives the group's first member `partitions` of `topic` and nothing else. */
function onlyPartitions(topic: string, partitions: readonly number[]): PartitionAssigner {
  const name = "bench-restore";
  return () => ({
    name,
    version: 0,
    async assign({ members }) {
      return members.map((m, i) => ({
        memberId: m.memberId,
        memberAssignment: AssignerProtocol.MemberAssignment.encode({
          version: 0,
          assignment: i === 0 ? { [topic]: [...partitions] } : {},
          userData: Buffer.alloc(0),
        }),
      }));
    },
    protocol({ topics }) {
      return {
        name,
        metadata: AssignerProtocol.MemberMetadata.encode({ version: 0, topics, userData: Buffer.alloc(0) }),
      };
    },
  });
}

/** Bytes of a topic's partitions' segment files, from the broker's log directory; undefined where it is not on this machine. */
export function segmentBytes(logDir: string, topic: string, partitions: number): number[] | undefined {
  const out: number[] = [];
  for (let p = 0; p < partitions; p++) {
    const dir = join(logDir, `${topic}-${p}`);
    if (!existsSync(dir)) return undefined;
    let bytes = 0;
    for (const f of readdirSync(dir)) if (f.endsWith(".log")) bytes += statSync(join(dir, f)).size;
    out.push(bytes);
  }
  return out;
}

/** How a forced compaction went. */
export interface Compaction {
  /** Whether every partition was seen to shrink (false: the log directory is not readable, or the wait ran out). */
  observed: boolean;
  seconds: number;
  before?: number[];
  after?: number[];
}

/**
 * Makes the broker's log cleaner compact the topic now: segments that roll at once and clean at any
 * dirty ratio, a record a partition to roll each active segment (a state already there, so the
 * changelog means the same), then waits until every partition's segments have shrunk and stayed so.
 */
export async function compactNow(
  admin: Admin,
  producer: Producer,
  topic: string,
  rollWith: readonly ThingState[],
  logDir: string,
  partitions: number,
  timeoutSeconds = 300,
): Promise<Compaction> {
  const started = performance.now();
  const before = segmentBytes(logDir, topic, partitions);
  // alterConfigs replaces the topic's whole configuration: the policy is given again.
  await admin.alterConfigs({
    validateOnly: false,
    resources: [
      {
        type: ConfigResourceTypes.TOPIC,
        name: topic,
        configEntries: [
          { name: "cleanup.policy", value: "compact" },
          { name: "segment.ms", value: "100" },
          { name: "min.cleanable.dirty.ratio", value: "0.01" },
        ],
      },
    ],
  });
  await sleep(1_000);
  await producer.send({
    topic,
    acks: -1,
    messages: rollWith.map((t) => ({ key: t.thingName, value: changelogValue(t), partition: partitionOf(t) })),
  });
  const seconds = (): number => (performance.now() - started) / 1000;
  if (before === undefined) {
    await sleep(60_000);
    return { observed: false, seconds: seconds() };
  }
  let last: number[] | undefined;
  while (seconds() < timeoutSeconds) {
    await sleep(2_000);
    const now = segmentBytes(logDir, topic, partitions)!;
    const shrunk = now.every((b, p) => b < before[p]!);
    if (shrunk && last !== undefined && now.every((b, p) => b === last![p])) {
      return { observed: true, seconds: seconds(), before, after: now };
    }
    last = now;
  }
  return { observed: false, seconds: seconds(), before, after: last };
}
