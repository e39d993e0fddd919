import { randomUUID } from "node:crypto";
import { Kafka, logLevel, type Producer } from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startCutProxy, type CutProxy } from "../support/cut-proxy.js";
import { startTestDms, type TestDms } from "../support/dms.js";
import { json } from "../support/http.js";
import { createTopic, kafkaEnv, startKafka } from "../support/kafka.js";
import { createPgDatabase, type PgDatabase } from "../support/postgres.js";
import { until } from "../support/wait.js";

const topic = `outage-${randomUUID()}`;
const THINGS = ["t1", "t2"];
const firstTimestamp = Date.now() - 60_000;

/** Every observation of the test is over the limit: one EVENT action each. */
const HOT_RULE = {
  name: "hot",
  enabled: true,
  filter: { domain: "acme", thingType: "10" },
  expression: [{ operator: "gt", resource: "temp", value: 30 }],
  threshold: { count: 1, interval: 0 },
  actions: [{ type: "EVENT", config: { classification: "ALARM", message: "hot ${observation.temp}" } }],
};

/** A FIND over every observation of the test. */
const FIND_ALL = { query: { size: 0, query: { range: { timestamp: { gte: firstTimestamp } } } } };

let database: PgDatabase;
let proxy: CutProxy;
let producer: Producer;
let dms: TestDms;
let ruleId: string;
/** Observations produced so far: every one is over the rule's limit, so each triggers it once. */
let produced = 0;

/** `count` more observations on the topic, keyed by their thing, each with a timestamp of its own. */
async function produce(count: number): Promise<void> {
  const messages = Array.from({ length: count }, (_, i) => {
    const n = produced + i;
    const thingName = THINGS[n % THINGS.length]!;
    return { key: thingName, value: JSON.stringify({ thingName, timestamp: firstTimestamp + n, state: { temp: 40 } }) };
  });
  await producer.send({ topic, messages });
  produced += count;
}

/** Read past the service: straight from the database, not through the proxy. */
async function count(sql: string, values: unknown[] = []): Promise<number> {
  const { rows } = await database.pool.query<{ n: number }>(sql, values);
  return rows[0]!.n;
}
const storedObservations = () =>
  count("SELECT count(*)::int AS n FROM observations WHERE thing_name = ANY($1::text[])", [THINGS]);
const distinctObservations = () =>
  count("SELECT count(DISTINCT (thing_name, ts))::int AS n FROM observations WHERE thing_name = ANY($1::text[])", [
    THINGS,
  ]);
const outboxRows = () => count("SELECT count(*)::int AS n FROM action_outbox WHERE rule_id = $1", [ruleId]);
const delivered = () =>
  count("SELECT count(*)::int AS n FROM action_outbox WHERE rule_id = $1 AND status = 'delivered'", [ruleId]);

beforeAll(async () => {
  const brokers = await startKafka();
  await createTopic(brokers, topic, 3);
  const kafka = new Kafka({ clientId: "outage-test", brokers: brokers.split(","), logLevel: logLevel.NOTHING });
  producer = kafka.producer();
  await producer.connect();
  database = await createPgDatabase([]);
  proxy = await startCutProxy(5432);
  dms = await startTestDms({
    env: {
      DMS_ROLES: "api,engine,actions",
      DMS_DATABASE_URL: database.url.replace(/:5432\//, `:${proxy.port}/`),
      DMS_DATABASE_CONNECT_TIMEOUT_MS: "1000",
      ...kafkaEnv(brokers, topic),
      KAFKA_EVENTS_TOPIC: `${topic}-events`,
    },
  });
  const created = await dms.call("POST", "/rules", { user: "alice", body: HOT_RULE });
  expect(created.status).toBe(200);
  ruleId = ((await json(created)) as { id: string }).id;
  // The engine follows the rule before the first observation is produced.
  await until(() => dms.dms.services.engine!.engine.ruleCount === 1, 10_000, "the rule in the engine");
}, 180_000);

afterAll(async () => {
  await dms?.close();
  await producer?.disconnect();
  await proxy?.close();
  await database?.drop();
});

describe("PostgreSQL going away mid-stream", () => {
  it("REST answers 503 SERVICE_UNAVAILABLE with Retry-After and /readyz names the database; no observation nor action is lost", async () => {
    await produce(60);
    await until(async () => (await storedObservations()) === 60, 30_000, "the first observations stored");
    await until(async () => (await outboxRows()) === 60, 30_000, "their actions in the outbox");
    expect((await dms.call("GET", "/readyz")).status).toBe(200);

    proxy.cut();
    // What the operations answer while the database cannot be reached: the same for every one, at once.
    const operations: [string, string, unknown?][] = [
      ["GET", "/rules"],
      ["GET", `/rules/${ruleId}`],
      ["GET", "/healthz"],
      // FIND reads on a thread of its own, through a pool of its own.
      ["POST", "/observations/find", FIND_ALL],
    ];
    for (const [method, path, body] of operations) {
      const started = performance.now();
      const res = await dms.call(method, path, { user: "alice", body });
      expect({ path, status: res.status, retryAfter: res.headers.get("retry-after") }).toEqual({
        path,
        status: 503,
        retryAfter: "5",
      });
      expect(await json(res)).toEqual({
        messageKey: "SERVICE_UNAVAILABLE",
        message: expect.stringContaining("database") as unknown,
      });
      expect(performance.now() - started).toBeLessThan(3000);
    }
    // A change is refused the same way, and nothing of it is applied.
    const refused = await dms.call("POST", "/rules", { user: "alice", body: { ...HOT_RULE, name: "while-away" } });
    expect(refused.status).toBe(503);
    expect(await json(refused)).toMatchObject({ messageKey: "SERVICE_UNAVAILABLE" });
    await until(async () => (await dms.call("GET", "/readyz")).status === 503, 5000, "/readyz not ready");
    const readyz = (await json(await dms.call("GET", "/readyz"))) as {
      status: string;
      waitingFor: { name: string; detail: string }[];
    };
    expect(readyz.status).toBe("waiting");
    expect(readyz.waitingFor).toEqual([
      { name: "database", ready: false, detail: expect.stringContaining("unreachable") as unknown },
    ]);

    // The stream goes on while the database is away: the engine cannot store it, and must not skip it.
    await produce(60);
    await new Promise((r) => setTimeout(r, 3000));
    await produce(30);

    proxy.restore();
    await until(async () => (await dms.call("GET", "/readyz")).status === 200, 10_000, "/readyz ready again");
    expect((await dms.call("GET", `/rules/${ruleId}`, { user: "alice" })).status).toBe(200);
    // Everything catches up: each observation stored once, each action in the outbox once, and delivered.
    await until(async () => (await storedObservations()) >= produced, 60_000, "every observation stored");
    await until(async () => (await outboxRows()) >= produced, 30_000, "every action in the outbox");
    await until(async () => (await delivered()) === produced, 30_000, "every action delivered");
    expect(await storedObservations()).toBe(produced);
    expect(await distinctObservations()).toBe(produced);
    expect(await outboxRows()).toBe(produced);
    expect(await count("SELECT count(*)::int AS n FROM events WHERE rule_id = $1", [ruleId])).toBe(produced);
    const found = await dms.call("POST", "/observations/find", { user: "alice", body: FIND_ALL });
    expect(((await json(found)) as { hits: { total: number } }).hits.total).toBe(produced);
    const rules = (await json(await dms.call("GET", "/rules", { user: "alice" }))) as { name: string }[];
    expect(rules.map((r) => r.name)).toEqual(["hot"]);
  }, 180_000);
});
