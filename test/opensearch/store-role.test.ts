import { randomUUID } from "node:crypto";
import { gunzipSync } from "node:zlib";
import { Kafka, logLevel, type Producer } from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDms, type TestDms } from "../support/dms.js";
import { json } from "../support/http.js";
import { createTopic, kafkaEnv, startKafka } from "../support/kafka.js";
import { OPENSEARCH_START_TIMEOUT_MS, startOpenSearch } from "../support/opensearch.js";
import { until } from "../support/wait.js";
import { MIN_TS, type ExportPageRow, type ExportPosition } from "../../src/observations/index.js";
import { OpenSearchClient, OpenSearchExportReader } from "../../src/opensearch/index.js";
import { dropPrefix, uniquePrefix } from "./support.js";

/**
 * The `store` role end to end, on a real broker and a real OpenSearch: what is produced to the
 * observations topic is indexed and FIND finds it, a bad message is a dead letter of the store
 * role, the consumer commits only what is indexed, and exports read OpenSearch.
 */

const DAY0 = Date.parse("2026-03-01T00:00:00Z");
const MINUTE = 60_000;

let brokers: string;
let url: string;
let kafka: Kafka;
let producer: Producer;

beforeAll(async () => {
  [brokers, url] = await Promise.all([startKafka(), startOpenSearch()]);
  kafka = new Kafka({ clientId: "store-role-test", brokers: brokers.split(","), logLevel: logLevel.NOTHING });
  producer = kafka.producer();
  await producer.connect();
}, OPENSEARCH_START_TIMEOUT_MS);
afterAll(async () => {
  await producer?.disconnect();
});

/** The env of a dms whose observations are in OpenSearch under `prefix`, read from `topic`. */
function openSearchEnv(topic: string, prefix: string, openSearchUrl = url): Record<string, string> {
  return {
    ...kafkaEnv(brokers, topic),
    KAFKA_EVENTS_TOPIC: `${topic}-events`,
    OPENSEARCH_URL: openSearchUrl,
    OPENSEARCH_INDEX_PREFIX: prefix,
    OPENSEARCH_INDEX_REPLICAS: "0",
    OPENSEARCH_FLUSH_MS: "20",
  };
}

async function produce(topic: string, messages: { key: string; value: string }[]): Promise<void> {
  await producer.send({ topic, messages });
}

const observation = (thingName: string, i: number, state: Record<string, unknown> = { temp: i }) => ({
  key: thingName,
  value: JSON.stringify({ thingName, timestamp: DAY0 + i * MINUTE, state }),
});

/** The offsets the store role's group committed, summed over the topic's partitions. */
async function committed(topic: string): Promise<number> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const [offsets] = await admin.fetchOffsets({ groupId: `g-${topic}-store`, topics: [topic] });
    return (offsets?.partitions ?? []).reduce((n, p) => n + Math.max(0, Number(p.offset)), 0);
  } finally {
    await admin.disconnect();
  }
}

const findAll = { size: 100, sort: [{ timestamp: "asc" }], query: { range: { timestamp: { gte: DAY0 } } } };

describe("the store role", () => {
  const topic = `os-store-${randomUUID()}`;
  const prefix = uniquePrefix("store");
  let t: TestDms;

  beforeAll(async () => {
    await createTopic(brokers, topic, 2);
    t = await startTestDms({ env: { DMS_ROLES: "api,engine,store", ...openSearchEnv(topic, prefix) } });
  }, 120_000);
  afterAll(async () => {
    await t?.close();
    await dropPrefix(url, prefix);
  });

  const find = async (body: unknown, user = "alice") => {
    const res = await t.call("POST", "/observations/find", { user, body: { query: body } });
    expect(res.status, await res.clone().text()).toBe(200);
    return json(res);
  };
  /** How many FIND finds; -1 while it cannot answer (an index the first `_bulk` made, its shard not started yet: 503). */
  const found = async (body: unknown): Promise<number> => {
    const res = await t.call("POST", "/observations/find", { user: "alice", body: { query: body } });
    if (res.status === 503) return -1;
    expect(res.status, await res.clone().text()).toBe(200);
    return (await json(res)).hits.total;
  };

  it("indexes what is produced to the observations topic, and FIND finds it there", async () => {
    const messages = Array.from({ length: 30 }, (_, i) => observation(i % 3 === 2 ? "e1" : i % 3 ? "t2" : "t1", i));
    await produce(topic, messages);
    await until(async () => (await found(findAll)) === 30, 30_000, "30 observations found");
    const answer = await find(findAll);
    expect(answer.hits.hits[0]).toMatchObject({
      _index: "observations-10",
      _type: "observation",
      _id: expect.stringMatching(new RegExp(`^kafka:${topic}:[01]:\\d+$`)),
      _source: { thingName: "t1", thingType: "10", domain: "acme", timestamp: DAY0, state: { temp: 0 } },
    });
    expect(answer._shards.total).toBe(2);
    // The engine evaluated them and left them to the store role: none in the database.
    expect(await t.dms.services.stores.observations.store.count()).toBe(0);
    // Every one is committed, once indexed.
    await until(async () => (await committed(topic)) === 30, 10_000, "offsets committed");
    // Planned on a FIND thread before it goes: refused as the embedded evaluator refuses it.
    const refused = await t.call("POST", "/observations/find", {
      user: "alice",
      body: { query: { query: { bool: { filter: [findAll.query, { not_a_query: {} }] } } } },
    });
    expect(refused.status).toBe(400);
    expect(await json(refused)).toEqual({
      messageKey: "INVALID_ARGUMENTS",
      message: "Property query is invalid: unsupported query [not_a_query]",
      property: "query",
    });
    // A reader of one thing type sees its own only.
    const eastie = await find({ size: 0, query: findAll.query }, "eastie");
    expect(eastie.hits.total).toBe(10);
  });

  it("keeps what it cannot index as dead letters with their reason, and goes on", async () => {
    await produce(topic, [
      { key: "t1", value: "not json" },
      observation("ghost", 100),
      // `state.temp` is a long of type 10: a string is the wrong type, as the engine judges it.
      observation("t1", 101, { temp: "hot" }),
      // An undeclared resource that was an object is a number now: OpenSearch refuses it (a number
      // where a number field took others is only left out of the index: `ignore_malformed`).
      observation("t2", 102, { extra: { nested: true } }),
      observation("t2", 103, { extra: 1 }),
      observation("t1", 104),
    ]);
    await until(async () => (await committed(topic)) === 36, 30_000, "every message committed");
    const letters = (await t.dms.services.stores.deadLetters.list({ limit: 100 })).filter((d) =>
      d.source.startsWith("store:"),
    );
    expect(letters.map((d) => [d.source, d.reason]).sort()).toEqual(
      [
        [`store:kafka:${topic}`, "not-json"],
        [`store:kafka:${topic}`, "unknown-thing"],
        [`store:kafka:${topic}`, "wrong-type"],
        [`store:kafka:${topic}`, "wrong-type"],
      ].sort(),
    );
    const refused = letters.find((d) => d.message.startsWith("OpenSearch refused it"));
    expect(refused).toMatchObject({ thingName: "t2", domain: "acme", partition: expect.any(Number) });
    expect(refused!.payload).toContain('"extra":1');
    // Searchable within the indices' refresh interval (a second) of being indexed.
    const later = { ...findAll, query: { range: { timestamp: { gte: DAY0 + 100 * MINUTE } } } };
    await until(async () => (await found(later)) === 2, 10_000, "the later observations found");
    const after = await find(later);
    expect(after.hits.hits.map((h: { _source: { state: unknown } }) => h._source.state)).toEqual([
      { extra: { nested: true } },
      { temp: 104 },
    ]);
  });

  it("indexes what POST /observations hands the engine (no topic in between), searchable once answered", async () => {
    const at = DAY0 + 200 * MINUTE;
    const res = await t.call("POST", "/observations", {
      user: "admin",
      body: [
        { thingName: "t1", timestamp: at, state: { temp: 7, latlng: "59.91,10.75" } },
        { thingName: "ghost", timestamp: at, state: {} },
      ],
    });
    expect(res.status).toBe(200);
    expect((await json(res)).accepted).toBe(1);
    const answer = await find({ ...findAll, query: { range: { timestamp: { gte: at } } } });
    expect(answer.hits.total).toBe(1);
    expect(answer.hits.hits[0]).toMatchObject({
      _index: "observations-10",
      _source: { thingName: "t1", timestamp: at, state: { temp: 7, latlng: "59.91,10.75" } },
    });
    // `latlng` is a geo point to OpenSearch whatever its form.
    const near = await find({
      size: 0,
      query: {
        bool: {
          filter: [
            { range: { timestamp: { gte: at } } },
            { geo_distance: { distance: "1km", "state.latlng": { lat: 59.91, lon: 10.75 } } },
          ],
        },
      },
    });
    expect(near.hits.total).toBe(1);
  });

  it("retention drops the indices older than the cutoff and deletes the older documents of the one it cuts", async () => {
    const day = Date.parse("2020-01-01T00:00:00Z");
    const old = (timestamp: number) => ({
      document: { thingName: "e1", thingType: "20", domain: "east", timestamp, state: { power: 1 } },
    });
    const store = t.dms.services.observations;
    await store.insertBatch([0, 1, 2].map((h) => old(day + h * 3_600_000)));
    await store.insertBatch([old(day + 86_400_000), old(day + 86_400_000 + 12 * 3_600_000)]);
    expect(await store.deleteOlderThan(day + 86_400_000 + 6 * 3_600_000, 1000)).toBe(4);
    const left = await find({
      size: 10,
      sort: [{ timestamp: "asc" }],
      query: { range: { timestamp: { gte: day, lt: day + 2 * 86_400_000 } } },
    });
    expect(left.hits.hits.map((h: { _source: { timestamp: number } }) => h._source.timestamp)).toEqual([
      day + 86_400_000 + 12 * 3_600_000,
    ]);
    const indices = await fetch(`${url}/_cat/indices/${prefix}-20-2020*?format=json&h=index`).then((r) => r.json());
    expect(indices).toEqual([{ index: `${prefix}-20-2020.01.02` }]);
  });

  it("an export reads its rows from OpenSearch, in time order, page after page", async () => {
    const res = await t.call("POST", "/observations/export/jobs", {
      user: "alice",
      body: {
        jobName: "os",
        type: "instant",
        thingType: "10",
        from: new Date(DAY0).toISOString(),
        to: new Date(DAY0 + 30 * MINUTE).toISOString(),
        resources: ["temp"],
      },
    });
    expect(res.status).toBe(200);
    const job = await json(res);
    const executions = await json(
      await t.call("GET", `/observations/export/jobs/${job.id}/executions`, { user: "alice" }),
    );
    const id = executions.exportJobExecutions[0].id;
    let e: { status: string } = { status: "QUEUED" };
    await until(
      async () => {
        e = await json(await t.call("GET", `/observations/export/executions/${id}`, { user: "alice" }));
        return e.status !== "QUEUED" && e.status !== "RUNNING";
      },
      20_000,
      "export finished",
    );
    expect(e.status).toBe("SUCCEEDED");
    const dl = await json(await t.call("GET", `/observations/export/executions/${id}/download`, { user: "alice" }));
    const signed = new URL(dl.StorageSignedURL);
    const file = await fetch(`${t.url}${signed.pathname}${signed.search}`);
    const csv = gunzipSync(Buffer.from(await file.arrayBuffer())).toString();
    const expected = ["timestamp,thingName,temp"];
    for (let i = 0; i < 30; i++) {
      if (i % 3 === 2) continue;
      expected.push(`${new Date(DAY0 + i * MINUTE).toISOString()},${i % 3 ? "t2" : "t1"},${i}`);
    }
    expect(csv).toBe(`${expected.join("\n")}\n`);

    // Page by page, each after the last row of the one before, the same rows in the same order.
    const reader = new OpenSearchExportReader(new OpenSearchClient(url), { prefix, period: "day" });
    const scope = { thingType: "10" };
    const whole = await reader.exportPage(scope, DAY0, DAY0 + 30 * MINUTE, { ts: MIN_TS, id: 0 }, 100);
    const paged: ExportPageRow[] = [];
    for (let after: ExportPosition = { ts: MIN_TS, id: 0 }; ;) {
      const page = await reader.exportPage(scope, DAY0, DAY0 + 30 * MINUTE, after, 3);
      paged.push(...page);
      if (page.length < 3) break;
      const [id, ts] = page[page.length - 1]!;
      after = { ts, id };
    }
    expect(whole).toHaveLength(20);
    expect(paged).toEqual(whole);
    expect(JSON.parse(whole[0]![3])).toEqual({
      thingName: "t1",
      thingType: "10",
      domain: "acme",
      timestamp: DAY0,
      state: { temp: 0 },
    });
  });
});

describe("the store role while OpenSearch does not answer", () => {
  const topic = `os-down-${randomUUID()}`;
  const prefix = uniquePrefix("down");
  afterAll(() => dropPrefix(url, prefix));

  it("commits nothing, and the next consumer of its group indexes every message", async () => {
    await createTopic(brokers, topic, 1);
    // A port nothing listens on: every _bulk fails, and is tried again with backoff.
    const down = await startTestDms({
      env: { DMS_ROLES: "api,store", ...openSearchEnv(topic, prefix, "http://127.0.0.1:1") },
    });
    await produce(
      topic,
      Array.from({ length: 5 }, (_, i) => observation("t1", i)),
    );
    await new Promise((r) => setTimeout(r, 3000));
    expect(await committed(topic)).toBe(0);
    await down.close();

    const up = await startTestDms({ env: { DMS_ROLES: "api,store", ...openSearchEnv(topic, prefix) } });
    try {
      await until(async () => (await committed(topic)) === 5, 30_000, "offsets committed");
      await until(
        async () => {
          const res = await up.call("POST", "/observations/find", { user: "alice", body: { query: findAll } });
          return (await json(res)).hits.total === 5;
        },
        10_000,
        "5 observations found",
      );
    } finally {
      await up.close();
    }
  }, 90_000);
});
