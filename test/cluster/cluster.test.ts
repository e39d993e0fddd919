/**
 * Three dms nodes as separate processes on one PostgreSQL database and one Kafka topic of six
 * partitions, every node with every role of the cluster (`api,engine,actions,scheduler`) and a data
 * dir of its own. All three start at once with the same provisioning file, as one environment for
 * every node would have them; what is made through one node, the others learn from the database. A stream of
 * observations for 200 things runs while node 2 is killed with SIGKILL and later started again;
 * what the threshold rules triggered is held to an oracle computed from the stream alone.
 */
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { Kafka, logLevel, type Producer } from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Provision } from "../../src/provision/index.js";
import { createTopic, startKafka } from "../support/kafka.js";
import { createPgDatabase, type PgDatabase } from "../support/postgres.js";
import { freePortRange } from "../support/ports.js";
import { until } from "../support/wait.js";
import { atNode, consumedPartitions, metricValue, NodeClient } from "./client.js";
import { ClusterNode, nodeEnv, type ClusterEnv } from "./nodes.js";
import { expectedTriggers, triggerOf, type StreamItem, type ThresholdRule, type Trigger } from "./oracle.js";
import { WebhookReceiver } from "./receiver.js";

const API_KEY = "cluster-test-api-key";
const PARTITIONS = 6;
const THINGS = 200;
/** Rounds of the stream: one observation of every thing each. */
const ROUNDS = 40;
/** The rounds produced before node 2 comes back; the rest after it is ready again. */
const ROUNDS_WHILE_FAILING = 30;
/** Node 2 is killed once this many rounds are out. */
const KILL_AFTER_ROUND = 8;
const ROUND_EVERY_MS = 400;

const thingName = (i: number): string => `c${String(i).padStart(3, "0")}`;

const PROVISION: Provision = {
  apiKeys: [API_KEY],
  domains: [{ id: "root" }, { id: "acme", parent: "root" }],
  users: [
    { userName: "admin", password: "admin-pw", role: "ReadWrite", homeDomain: "root", privileges: { root: ["*.*"] } },
  ],
  thingTypes: [{ id: "10", label: "Sensor", domain: "acme", resources: [{ name: "temp", dataType: "long" }] }],
  things: Array.from({ length: THINGS }, (_, i) => ({ thingName: thingName(i), thingType: "10", domain: "acme" })),
};

/** A webhook rule (count 3) and an event rule (count 2), both without an interval. */
const HOOK_RULE: ThresholdRule = { id: "cluster-hook", above: 50, count: 3 };
const EVENT_RULE: ThresholdRule = { id: "cluster-event", above: 85, count: 2 };

/** Deterministic values, so that a failure can be run again as it was. */
function values(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1_664_525) + 1_013_904_223) >>> 0;
    return s % 101;
  };
}

describe("a cluster of three dms processes", () => {
  const id = randomUUID().slice(0, 8);
  const dir = mkdtempSync(join(tmpdir(), "dms-cluster-test-"));
  const shared: Omit<ClusterEnv, "databaseUrl" | "brokers"> = {
    observationsTopic: `cluster-obs-${id}`,
    eventsTopic: `cluster-events-${id}`,
    groupId: `cluster-${id}`,
    partitions: PARTITIONS,
  };
  let db: PgDatabase;
  let kafka: Kafka;
  let producer: Producer;
  let receiver: WebhookReceiver;
  let nodes: ClusterNode[];
  let admin: NodeClient;
  const base = Math.floor(Date.now() / 60_000) * 60_000 - 3_600_000;
  const stream: StreamItem[] = [];

  beforeAll(async () => {
    db = await createPgDatabase([]);
    const brokers = await startKafka();
    await createTopic(brokers, shared.observationsTopic, PARTITIONS);
    kafka = new Kafka({ clientId: "cluster-test", brokers: brokers.split(","), logLevel: logLevel.WARN });
    producer = kafka.producer();
    await producer.connect();
    receiver = await new WebhookReceiver().start();

    const env: ClusterEnv = { ...shared, databaseUrl: db.url, brokers };
    const ports = await freePortRange(3);
    const provision = join(dir, "provision.json");
    writeFileSync(provision, JSON.stringify(PROVISION));
    nodes = [1, 2, 3].map((i) => {
      const port = ports.first + i - 1;
      return new ClusterNode(i, join(dir, `node-${i}`), port, { ...nodeEnv(env, port), DMS_PROVISION: provision });
    });
    // All at once: they migrate the one database together and apply the one file one after the other.
    for (const n of nodes) n.start();
    await Promise.all(nodes.map((n) => n.ready()));
    admin = await NodeClient.login(nodes[0]!.url, API_KEY, "admin", "admin-pw");
  }, 240_000);

  afterAll(async () => {
    await Promise.all((nodes ?? []).map((n) => n.stop()));
    for (const n of nodes ?? []) {
      const problems = n.problems();
      console.log(`cluster: node ${n.index} logged ${problems.length} warnings and errors`, problems.slice(0, 10));
    }
    await producer?.disconnect();
    const topics = kafka?.admin();
    if (topics) {
      await topics.connect();
      await topics.deleteTopics({ topics: [shared.observationsTopic, shared.eventsTopic] }).catch(() => undefined);
      await topics.disconnect();
    }
    await receiver?.close();
    await db?.drop();
    rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  const node = (i: 1 | 2 | 3): ClusterNode => nodes[i - 1]!;
  const as = (i: 1 | 2 | 3): NodeClient => admin.at(node(i).url);

  it("shares identity and keys: a token that node 1 issued is good on nodes 2 and 3, its refresh token once on any", async () => {
    for (const i of [2, 3] as const) {
      expect((await as(i).ok("GET", "/admin/things/c007")).thingName).toBe("c007");
    }
    const post = (i: 1 | 2 | 3, path: string, body: unknown): Promise<Response> =>
      fetch(`${node(i).url}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": API_KEY },
        body: JSON.stringify(body),
      });
    const login = (await (await post(1, "/auth/login", { userName: "admin", password: "admin-pw" })).json()) as {
      credentials: { refreshToken: string };
    };
    const refreshToken = login.credentials.refreshToken;
    const refreshed = await post(2, "/auth/refresh", { refreshToken });
    expect(refreshed.status).toBe(200);
    const { credentials } = (await refreshed.json()) as { credentials: { token: string } };
    const described = await fetch(`${node(3).url}/admin/things/c007`, {
      headers: { "x-api-key": API_KEY, authorization: credentials.token },
    });
    expect(described.status).toBe(200);
    // Used up on node 2: presented again on node 3, it is refused.
    expect((await post(3, "/auth/refresh", { refreshToken })).status).toBe(401);
  });

  it("shows a rule created on node 1 on nodes 2 and 3 within a second, and every engine runs it", async () => {
    const rule = (r: ThresholdRule, action: unknown): unknown => ({
      id: r.id,
      name: r.id,
      enabled: true,
      filter: { domain: "acme", thingType: "10" },
      expression: [{ operator: "gt", resource: "temp", value: r.above }],
      threshold: { count: r.count, interval: 0 },
      actions: [action],
    });
    const created = Date.now();
    await as(1).ok(
      "POST",
      "/rules",
      rule(HOOK_RULE, {
        type: "WEBHOOK",
        config: {
          uri: `${receiver.url}/hook`,
          body: '{"rule":"${rule.id}","thing":"${thing.thingName}","ts":"${observation.timestamp}"}',
        },
      }),
    );
    await Promise.all(
      ([2, 3] as const).map((i) =>
        until(
          async () => (await as(i).call("GET", `/rules/${HOOK_RULE.id}`)).status === 200,
          1000,
          `rule on node ${i}`,
        ),
      ),
    );
    const visibleAfter = Date.now() - created;
    await as(1).ok(
      "POST",
      "/rules",
      rule(EVENT_RULE, {
        type: "EVENT",
        config: { classification: "ALARM", message: "hot at ${observation.timestamp}" },
      }),
    );
    for (const i of [2, 3] as const) {
      const ids = ((await as(i).ok("GET", "/rules")) as { id: string }[]).map((r) => r.id);
      expect(ids).toEqual(expect.arrayContaining([HOOK_RULE.id, EVENT_RULE.id]));
    }
    // The engines compile rules from the bus: each runs both before any observation comes.
    for (const n of nodes) await until(async () => (await metricValue(n.url, "dms_engine_rules")) === 2, 2000);
    console.log(`cluster: a rule made on node 1 was visible on nodes 2 and 3 after ${visibleAfter} ms`);
  });

  it("serves a file uploaded through node 1 from node 3, and describes on node 3 a thing job made on node 1", async () => {
    const content = `cluster file ${id}\n`.repeat(1000);
    const query = `fileName=notes.txt&thingName=${thingName(1)}`;
    const upload = await as(1).ok("GET", `/files/upload-url?${query}`);
    const put = await fetch(upload.url as string, { method: "PUT", body: content });
    expect(put.status).toBe(200);
    const download = await as(1).ok("GET", `/files/download-url?${query}`);
    const got = await fetch(atNode(download.url as string, node(3).url));
    expect(got.status).toBe(200);
    expect(await got.text()).toBe(content);

    // The document's signed PUT URL comes from node 1 and is used at node 2.
    const ticket = await as(1).ok("POST", "/thing-jobs/documents", { documentName: "reboot", domain: "acme" });
    const doc = await fetch(atNode(ticket.signedUrl as string, node(2).url), {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ operation: "reboot" }),
    });
    expect(doc.status).toBe(200);
    const job = await as(1).ok("POST", "/thing-jobs/jobs", {
      domain: "acme",
      description: "reboot two",
      jobDocumentId: ticket.documentId,
      targets: { things: [thingName(1), thingName(2)] },
      targetSelection: "SNAPSHOT",
    });
    const described = await as(3).ok("GET", `/thing-jobs/jobs/${job.jobId}`);
    expect(described).toMatchObject({ jobId: job.jobId, status: "IN_PROGRESS", description: "reboot two" });
    const executions = await as(3).ok("GET", `/thing-jobs/jobs/${job.jobId}/job-executions`);
    expect(JSON.stringify(executions)).toContain(thingName(2));
  });

  it("makes every trigger the stream calls for through a SIGKILL of node 2 and its restart; failover within 10 s", async () => {
    const next = Array.from({ length: THINGS }, (_, i) => values(i + 1));
    let produced = 0;
    const produceRound = async (round: number): Promise<void> => {
      const messages = Array.from({ length: THINGS }, (_, i) => {
        const item: StreamItem = { thingName: thingName(i), timestamp: base + round * 1000 + i, value: next[i]!() };
        stream.push(item);
        return {
          key: item.thingName,
          value: JSON.stringify({ thingName: item.thingName, timestamp: item.timestamp, state: { temp: item.value } }),
        };
      });
      await producer.send({ topic: shared.observationsTopic, acks: -1, messages });
      produced = round + 1;
    };
    const produceRounds = async (from: number, to: number): Promise<void> => {
      for (let r = from; r < to; r++) {
        const started = Date.now();
        await produceRound(r);
        await new Promise((resolve) => setTimeout(resolve, Math.max(0, ROUND_EVERY_MS - (Date.now() - started))));
      }
    };

    const streaming = produceRounds(0, ROUNDS_WHILE_FAILING);
    // Node 2 takes part before it dies: it consumed partitions of its own.
    await until(() => produced >= KILL_AFTER_ROUND, 60_000, "rounds before the kill");
    const owned = await consumedPartitions(node(2).url, shared.observationsTopic);
    expect(owned.size).toBeGreaterThan(0);
    const killedAt = Date.now();
    await node(2).kill();

    // Failover: nodes 1 and 3 between them consume every partition node 2 had.
    await until(
      async () => {
        const taken = new Set([
          ...(await consumedPartitions(node(1).url, shared.observationsTopic)),
          ...(await consumedPartitions(node(3).url, shared.observationsTopic)),
        ]);
        return [...owned].every((p) => taken.has(p));
      },
      30_000,
      "node 2's partitions consumed by nodes 1 and 3",
      100,
    );
    const failoverMs = Date.now() - killedAt;
    console.log(
      `cluster: node 2's partitions ${[...owned].join(",")} were consumed again ${failoverMs} ms after SIGKILL`,
    );

    await streaming;
    node(2).start();
    await node(2).ready();
    await produceRounds(ROUNDS_WHILE_FAILING, ROUNDS);
    // Back in the group, node 2 takes a share of the partitions again.
    await until(
      async () => (await consumedPartitions(node(2).url, shared.observationsTopic)).size > 0,
      30_000,
      "node 2 consuming again",
      200,
    );

    const want = expectedTriggers([HOOK_RULE], stream);
    const wantEvents = expectedTriggers([EVENT_RULE], stream);
    expect(want.size).toBeGreaterThan(100);
    expect(wantEvents.size).toBeGreaterThan(10);

    // A delivery node 2 had claimed when it died goes again once its lease (30 s) ends.
    const delivered = (): Map<Trigger, Set<string>> => {
      const byTrigger = new Map<Trigger, Set<string>>();
      for (const d of receiver.deliveries) {
        const body = JSON.parse(d.body) as { rule: string; thing: string; ts: string };
        const trigger = triggerOf(body.rule, body.thing, Number(body.ts));
        byTrigger.set(trigger, (byTrigger.get(trigger) ?? new Set()).add(d.idempotencyKey));
      }
      return byTrigger;
    };
    await until(() => [...want].every((t) => delivered().has(t)), 90_000, "every expected webhook", 500).catch(
      (err: unknown) => {
        const missing = [...want].filter((t) => !delivered().has(t));
        throw new Error(`${(err as Error).message}: ${missing.length} missing, e.g. ${missing.slice(0, 5).join(" ")}`);
      },
    );
    const events = async (): Promise<Set<Trigger>> => {
      const seen = new Set<Trigger>();
      let marker = "";
      for (;;) {
        const page = await as(3).ok("GET", `/events?size=1000${marker ? `&marker=${marker}` : ""}`);
        for (const e of page.events as { ruleId: string; thingName: string; message: string }[]) {
          seen.add(triggerOf(e.ruleId, e.thingName, Number(e.message.replace("hot at ", ""))));
        }
        if (!page.pageInfo.hasNext) return seen;
        marker = page.pageInfo.nextMarker as string;
      }
    };
    await until(async () => (await events()).size >= wantEvents.size, 30_000, "every expected event", 500);
    // What is still under way (a replayed batch's deliveries) has a moment to arrive before the count.
    await new Promise((resolve) => setTimeout(resolve, 2000));

    const got = delivered();
    const unexpected = [...got.keys()].filter((t) => !want.has(t));
    expect(unexpected, "webhooks the stream does not call for").toEqual([]);
    const twoKeys = [...got].filter(([, keys]) => keys.size !== 1);
    expect(twoKeys, "a trigger delivered under two idempotency keys").toEqual([]);
    const keys = new Set(receiver.deliveries.map((d) => d.idempotencyKey));
    expect(keys.size).toBe(want.size);
    expect([...(await events())].sort()).toEqual([...wantEvents].sort());
    console.log(
      `cluster: ${stream.length} observations, ${want.size} webhooks expected, ${receiver.deliveries.length} received ` +
        `(${receiver.deliveries.length - keys.size} duplicates), ${wantEvents.size} events`,
    );
    expect(failoverMs).toBeLessThanOrEqual(10_000);
  }, 240_000);

  it("answers FIND on node 3 with every observation of the stream, each once", async () => {
    const find = async (): Promise<{ total: number; perThing: number[] }> => {
      const body = await as(3).ok("POST", "/observations/find", {
        query: {
          size: 0,
          query: { range: { timestamp: { gte: base, lte: base + ROUNDS * 1000 } } },
          aggs: { things: { terms: { field: "thingName", size: 1000 } } },
        },
      });
      const buckets = body.aggregations.things.buckets as { doc_count: number }[];
      return { total: body.hits.total as number, perThing: buckets.map((b) => b.doc_count) };
    };
    await until(async () => (await find()).total >= stream.length, 30_000, "every observation stored", 500);
    const { total, perThing } = await find();
    expect(total).toBe(stream.length);
    expect(perThing).toEqual(Array.from({ length: THINGS }, () => ROUNDS));
  });

  it("runs an export on node 2 whose signed URL downloads from node 3", async () => {
    const job = await as(2).ok("POST", "/observations/export/jobs", {
      jobName: "cluster",
      type: "instant",
      thingType: "10",
      from: new Date(base).toISOString(),
      to: new Date(base + ROUNDS * 1000).toISOString(),
      resources: ["temp"],
    });
    const executions = await as(2).ok("GET", `/observations/export/jobs/${job.id}/executions`);
    const executionId = executions.exportJobExecutions[0].id as string;
    await until(
      async () => (await as(3).ok("GET", `/observations/export/executions/${executionId}`)).status === "SUCCEEDED",
      60_000,
      "the export to succeed",
      250,
    );
    const link = await as(2).ok("GET", `/observations/export/executions/${executionId}/download`);
    expect(new URL(link.StorageSignedURL as string).port).toBe(String(node(2).port));
    const file = await fetch(atNode(link.StorageSignedURL as string, node(3).url));
    expect(file.status).toBe(200);
    const lines = gunzipSync(Buffer.from(await file.arrayBuffer()))
      .toString()
      .trimEnd()
      .split("\n");
    expect(lines[0]).toBe("timestamp,thingName,temp");
    expect(lines.length - 1).toBe(stream.length);
  });
});
