import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Kafka, logLevel, type Admin, type Producer } from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDms, type TestDms } from "../support/dms.js";
import { createTopic, kafkaEnv, startKafka } from "../support/kafka.js";
import { until } from "../support/wait.js";
import { CollectingSink, hot } from "./support.js";

/**
 * Two engine processes in one consumer group on one data directory: when the
 * partition of a thing changes hands, its new owner goes on from the state the
 * old owner left in the shared table (a half-reached count resumes), not from
 * what it read at its own start.
 */
describe("engines sharing a data directory hand a thing's state over on a rebalance", () => {
  const topic = `rebalance-${randomUUID()}`;
  const groupId = `g-${topic}`;
  const dataDir = mkdtempSync(join(tmpdir(), "dms-rebalance-"));
  let brokers: string;
  let admin: Admin;
  let producer: Producer;
  const engines: { t: TestDms; sink: CollectingSink; closed: boolean }[] = [];

  beforeAll(async () => {
    brokers = await startKafka();
    await createTopic(brokers, topic, 2);
    const kafka = new Kafka({ clientId: "rebalance-test", brokers: brokers.split(","), logLevel: logLevel.NOTHING });
    admin = kafka.admin();
    producer = kafka.producer();
    await Promise.all([admin.connect(), producer.connect()]);
    const env = {
      DMS_ROLES: "api,engine",
      ...kafkaEnv(brokers, topic),
      KAFKA_GROUP_ID: groupId,
      DMS_BUS_POLL_MS: "50",
    };
    const sinks = [new CollectingSink(), new CollectingSink()];
    const first = await startTestDms({ dataDir, env, start: { actionSink: sinks[0] } });
    // Three consecutive hot observations fire: the count is what must survive the hand-over.
    const { id: _, ...rule } = { ...hot, threshold: { count: 3, interval: 0 } };
    const created = await first.call("POST", "/rules", { user: "admin", body: { ...rule, id: "hot3" } });
    expect(created.status).toBe(200);
    const second = await startTestDms({ dataDir, env, start: { actionSink: sinks[1] } });
    engines.push({ t: first, sink: sinks[0]!, closed: false }, { t: second, sink: sinks[1]!, closed: false });
  }, 60_000);
  afterAll(async () => {
    for (const e of engines) if (!e.closed) await e.t.close();
    await producer?.disconnect();
    await admin?.disconnect();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const members = async (): Promise<number> => {
    const { groups } = await admin.describeGroups([groupId]);
    const g = groups[0];
    return g?.state === "Stable" ? g.members.length : 0;
  };
  const evaluated = async (t: TestDms): Promise<number> => {
    const metric = t.dms.services.metrics.registry.getSingleMetric("dms_engine_observations_total");
    return (await metric!.get()).values[0]?.value ?? 0;
  };
  const hotObservation = (temp: number) => ({
    key: "t1",
    value: JSON.stringify({ thingName: "t1", timestamp: Date.now(), state: { temp } }),
  });

  it("the new owner resumes the count the old owner left half-reached", async () => {
    await until(async () => (await members()) === 2, 30_000, "both engines in the group");
    await producer.send({ topic, messages: [hotObservation(31), hotObservation(32)] });
    const counts = async () => Promise.all(engines.map((e) => evaluated(e.t)));
    await until(async () => (await counts()).some((n) => n === 2), 30_000, "two observations evaluated");
    const ownerIndex = (await counts()).findIndex((n) => n === 2);
    const owner = engines[ownerIndex]!;
    const heir = engines[1 - ownerIndex]!;
    // The heir read the state table at its start, when t1 had none: only the hand-over can tell it "2 of 3".
    expect(owner.sink.actions).toEqual([]);

    owner.closed = true;
    await owner.t.close();
    await until(async () => (await members()) === 1, 60_000, "the group down to the heir");
    await producer.send({ topic, messages: [hotObservation(33)] });
    await until(() => heir.sink.actions.length === 1, 30_000, "the third consecutive match to fire in the heir");
    expect(heir.sink.actions[0]).toMatchObject({ ruleId: "hot3", thingName: "t1" });
    expect(heir.t.dms.services.engine!.engine.thingState("t1")).toMatchObject({ seq: 3, state: { temp: 33 } });
  }, 150_000);
});
