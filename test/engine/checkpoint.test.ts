import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Kafka, logLevel, type Admin, type Producer } from "kafkajs";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  decodeMessages,
  decodeValue,
  engineMigrations,
  MemoryStateStore,
  RuleEngine,
  SqliteStateStore,
  type ThingInfo,
  type TriggeredAction,
} from "../../src/engine/index.js";
import { KafkaObservationSource } from "../../src/engine/sources/kafka.js";
import type { Rule } from "../../src/rules/index.js";
import { openDatabase, type Db } from "../../src/store/index.js";
import { createTopic, startKafka } from "../support/kafka.js";
import { until } from "../support/wait.js";
import { hot } from "./support.js";

const THINGS = 40;
const resolveThing = (thingName: string): ThingInfo => ({
  thingName,
  thingType: "10",
  domain: "acme",
  domains: new Set(["root", "acme"]),
  checks: new Map(),
});

/** Two matches in a row fire (temp 26..30 is followed by a match 6 observations of the thing later, 31..36). */
const hotTwice: Rule = {
  ...hot,
  id: "hot-twice",
  expression: [{ operator: "gt", resource: "temp", value: 25 }],
  threshold: { count: 2, interval: 0 },
};

/** Observation i: thing i % THINGS, keyed by it (one partition a thing). */
const body = (i: number) => ({
  thingName: `t${i % THINGS}`,
  timestamp: 1_763_000_000_000 + i,
  state: { temp: 20 + (i % 17) },
});

/** A trigger by rule, thing and observation (idempotency keys name the observation by a position the reference has not). */
const trigger = (a: TriggeredAction): string => `${a.ruleId}:${a.thingName}:${a.payload.observation.timestamp}`;

const dirs: string[] = [];
const dbs: Db[] = [];
afterEach(() => {
  for (const db of dbs.splice(0)) db.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function database(): Db {
  const dir = mkdtempSync(join(tmpdir(), "dms-checkpoint-"));
  dirs.push(dir);
  const db = openDatabase({ dataDir: dir, migrations: engineMigrations });
  dbs.push(db);
  return db;
}

interface Row {
  thing_name: string;
  seq: number;
}
const rows = (db: Db): Row[] =>
  db.prepare<[], Row>("SELECT thing_name, seq FROM engine_thing_state ORDER BY thing_name").all();

describe("checkpoints and the Kafka source (real Kafka, real SQLite)", () => {
  let brokers: string;
  let kafka: Kafka;
  let admin: Admin;
  let producer: Producer;
  const sources: KafkaObservationSource[] = [];

  beforeAll(async () => {
    brokers = await startKafka();
    kafka = new Kafka({ clientId: "checkpoint-test", brokers: brokers.split(","), logLevel: logLevel.NOTHING });
    admin = kafka.admin();
    producer = kafka.producer();
    await Promise.all([admin.connect(), producer.connect()]);
  }, 60_000);
  afterAll(async () => {
    for (const s of sources) await s.stop();
    await producer?.disconnect();
    await admin?.disconnect();
  });

  const produce = (topic: string, from: number, to: number) =>
    producer.send({
      topic,
      messages: Array.from({ length: to - from }, (_, k) => ({
        key: body(from + k).thingName,
        value: JSON.stringify(body(from + k)),
      })),
    });
  /** The group's committed offsets, by partition ("-1": none). */
  const committed = async (groupId: string, topic: string): Promise<Map<number, string>> => {
    const [offsets] = await admin.fetchOffsets({ groupId, topics: [topic] });
    return new Map(offsets!.partitions.map((p) => [p.partition, p.offset]));
  };
  const endOffsets = async (topic: string): Promise<Map<number, string>> =>
    new Map((await admin.fetchTopicOffsets(topic)).map((p) => [p.partition, p.high]));

  function consume(topic: string, engine: RuleEngine, onCommit?: () => void): KafkaObservationSource {
    const source = new KafkaObservationSource({
      brokers: brokers.split(","),
      topic,
      groupId: `g-${topic}`,
      chunkSize: 100,
      checkpoint: () => engine.checkpoint(),
      onCommit,
    });
    sources.push(source);
    void source.start((raws) => engine.handle(decodeMessages(raws)));
    return source;
  }

  /** An engine on `db` that checkpoints only when asked, and the observations it handled. */
  function checkpointedOnRequest(db: Db): { engine: RuleEngine; evaluated: () => number } {
    let evaluated = 0;
    const engine = new RuleEngine({
      resolveThing,
      state: new SqliteStateStore(db),
      sink: { accept: async () => {} },
      checkpointMs: Infinity,
      onBatch: (r) => (evaluated += r.accepted),
    });
    engine.load([hotTwice]);
    return { engine, evaluated: () => evaluated };
  }

  it("does not commit past the last durable checkpoint", async () => {
    const topic = `ckpt-commit-${randomUUID()}`;
    await createTopic(brokers, topic, 1);
    const db = database();
    const { engine, evaluated } = checkpointedOnRequest(db);
    await produce(topic, 0, 500);
    consume(topic, engine);
    await until(async () => evaluated() === 500, 30_000, "500 observations handled");
    // Handled (actions accepted, and resolved so the fetch moved on) but in no checkpoint: not committed.
    await new Promise((r) => setTimeout(r, 500));
    expect((await committed(`g-${topic}`, topic)).get(0)).toBe("-1");
    expect(rows(db)).toEqual([]);
    await engine.checkpoint();
    await until(
      async () => (await committed(`g-${topic}`, topic)).get(0) === "500",
      10_000,
      "committed once checkpointed",
    );
    expect(rows(db)).toHaveLength(THINGS);
  }, 60_000);

  it("a batch the sink refuses after a checkpoint: everything after the committed offset is evaluated again, no trigger lost, none counted twice", async () => {
    const topic = `ckpt-refuse-${randomUUID()}`;
    await createTopic(brokers, topic, 2);
    const db = database();
    let commits = 0;
    let refused = 0;
    const accepted: string[] = [];
    const engine = new RuleEngine({
      resolveThing,
      state: new SqliteStateStore(db),
      sink: {
        // Refuses the first batch with actions once a checkpoint has been committed.
        accept: async (actions: TriggeredAction[]) => {
          if (commits > 0 && refused === 0) {
            refused++;
            throw new Error("outbox unavailable");
          }
          accepted.push(...actions.map(trigger));
        },
      },
      checkpointMs: 100,
    });
    engine.load([hotTwice]);
    const STREAM = 4000;
    await produce(topic, 0, STREAM / 2);
    consume(topic, engine, () => commits++);
    await until(async () => commits > 0, 30_000, "a checkpoint committed");
    await produce(topic, STREAM / 2, STREAM);
    const ends = await endOffsets(topic);
    await until(
      async () => {
        const c = await committed(`g-${topic}`, topic);
        return [...ends].every(([p, high]) => c.get(p) === high);
      },
      60_000,
      "every offset committed",
    );
    expect(refused).toBe(1);
    // Every observation counted once, and every trigger of a run without a failure made (the outbox keeps each key once).
    const table = rows(db);
    expect(table).toHaveLength(THINGS);
    for (const r of table) expect(r.seq).toBe(STREAM / THINGS);
    const reference = new RuleEngine({ resolveThing, state: new MemoryStateStore(), sink: { accept: async () => {} } });
    reference.load([hotTwice]);
    const all = Array.from({ length: STREAM }, (_, i) => decodeValue(body(i), { source: "reference" }));
    const expected = reference.process(all).actions.map(trigger);
    expect(expected.length).toBeGreaterThan(100);
    expect([...new Set(accepted)].sort()).toEqual(expected.sort());
  }, 120_000);

  it("a rebalance while a batch is handled checkpoints and commits what was handed over before joining again", async () => {
    const topic = `ckpt-rebalance-${randomUUID()}`;
    const groupId = `g-${topic}`;
    await createTopic(brokers, topic, 2);
    const db = database();
    let joins = 0;
    // No checkpoint but the one the rebalance takes: before it, nothing is committed.
    const { engine, evaluated } = checkpointedOnRequest(db);
    // 30 s of handling at the pace below: the rebalance comes while batches are handled.
    const STREAM = 50_000;
    for (let from = 0; from < STREAM; from += 10_000) await produce(topic, from, from + 10_000);
    const source = new KafkaObservationSource({
      brokers: brokers.split(","),
      topic,
      groupId,
      chunkSize: 100,
      checkpoint: () => engine.checkpoint(),
      onRebalance: () => {
        joins++;
        void engine.resync();
      },
    });
    sources.push(source);
    // A slow handler, so that the heartbeat which learns of the rebalance comes inside a batch.
    const slow = (ms: number) => new Promise((r) => setTimeout(r, ms));
    void source.start(async (raws) => {
      await slow(60);
      return engine.handle(decodeMessages(raws));
    });
    await until(async () => evaluated() >= 300, 30_000, "a few chunks handled");
    expect(await committed(groupId, topic)).toEqual(
      new Map([
        [0, "-1"],
        [1, "-1"],
      ]),
    );
    // A second member joins the group (it reads nothing and commits nothing): the group rebalances.
    const other = kafka.consumer({ groupId });
    await other.connect();
    try {
      await other.subscribe({ topic, fromBeginning: true });
      await other.run({ autoCommit: false, eachBatchAutoResolve: false, eachBatch: async () => {} });
      await until(async () => joins >= 2, 60_000, "the source to join the group again");
      // Committed before the source joined again, by the checkpoint the rebalance took.
      const offsets = await committed(groupId, topic);
      const committedCount = [...offsets.values()].reduce((n, o) => n + Math.max(0, Number(o)), 0);
      expect(committedCount).toBeGreaterThan(0);
      // The durable state covers at least what is committed: each observation counted in it once.
      const counted = rows(db).reduce((n, r) => n + r.seq, 0);
      expect(counted).toBeGreaterThanOrEqual(committedCount);
      expect(counted).toBeLessThanOrEqual(evaluated());
    } finally {
      await other.disconnect();
    }
  }, 120_000);
});

describe("checkpoints without Kafka", () => {
  it("a batch that cannot be replayed is durable once it resolves", async () => {
    const db = database();
    const engine = new RuleEngine({ resolveThing, state: new SqliteStateStore(db), sink: { accept: async () => {} } });
    engine.load([hotTwice]);
    const result = await engine.handle([decodeValue(body(7), { source: "http" })]);
    expect(result.accepted).toBe(1);
    const other = openDatabase({ dataDir: dirs[dirs.length - 1]!, migrations: [] });
    expect(rows(other)).toEqual([{ thing_name: "t7", seq: 1 }]);
    other.close();
  });

  it("a large checkpoint does not hold the event loop: a timer fires between its slices", async () => {
    const db = database();
    const engine = new RuleEngine({
      resolveThing,
      state: new SqliteStateStore(db),
      sink: { accept: async () => {} },
      checkpointMs: Infinity,
    });
    engine.load([hotTwice]);
    const things = 100_000;
    for (let start = 0; start < things; start += 5000) {
      const raws = Array.from({ length: 5000 }, (_, k) => ({
        key: null,
        value: Buffer.from(JSON.stringify({ thingName: `x${start + k}`, timestamp: 1, state: { temp: 20 } })),
        position: { source: "kafka:big", partition: 0, offset: String(start + k) },
      }));
      await engine.handle(decodeMessages(raws));
    }
    let longest = 0;
    let ticks = 0;
    let last = performance.now();
    const timer = setInterval(() => {
      const now = performance.now();
      longest = Math.max(longest, now - last);
      last = now;
      ticks++;
    }, 1);
    const t0 = performance.now();
    await engine.checkpoint();
    const took = performance.now() - t0;
    clearInterval(timer);
    expect(db.prepare("SELECT count(*) AS n FROM engine_thing_state").get()).toEqual({ n: things });
    // Slices of about 5 ms: the timer waits for one slice, not for the whole checkpoint (this box is shared: margins wide).
    expect(took).toBeGreaterThan(100);
    expect(ticks).toBeGreaterThan(10);
    expect(longest).toBeLessThan(took / 3);
  }, 60_000);
});
