import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  PgJobStore,
  SqliteJobStore,
  jobsPgMigrations,
  type JobStore,
  type NewStoredJob,
} from "../../src/jobs/index.js";
import { migrations } from "../../src/migrations.js";
import { storeBackends } from "../support/backends.js";

/**
 * One contract, every implementation of the jobs' store: domain values read back as written, and
 * the transaction the rollout and the device side rely on, whichever database is behind it.
 */

const T0 = Date.parse("2026-01-01T00:00:00.000Z");

const job = (jobId: string, over: Partial<NewStoredJob> = {}): NewStoredJob => ({
  jobId,
  domain: "acme",
  description: "update",
  targetSelection: "SNAPSHOT",
  documentId: "doc",
  targetThings: ["t1", "t2"],
  createdAt: T0,
  maximumPerMinute: null,
  inProgressTimeoutMinutes: null,
  abortConfig: null,
  ...over,
});

const backends = storeBackends<JobStore>({
  sqlite: { migrations, store: (db) => new SqliteJobStore(db) },
  pg: { migrations: jobsPgMigrations, store: (pool) => new PgJobStore(pool) },
});

describe.each(backends)("job store contract: $name", (backend) => {
  let store: JobStore;
  let other: JobStore;
  beforeAll(async () => {
    [store, other] = await backend.openPair();
    await store.insertDocument({
      documentId: "doc",
      documentName: "firmware",
      domain: "acme",
      createdAt: T0,
      uploadExpiresAt: T0 + 3_600_000,
    });
  });
  afterAll(() => backend.close());

  it("a document is uploaded once", async () => {
    expect(await store.document("doc")).toEqual({
      documentId: "doc",
      documentName: "firmware",
      domain: "acme",
      content: null,
      createdAt: T0,
      uploadExpiresAt: T0 + 3_600_000,
      uploadedAt: null,
    });
    expect(await store.uploadDocument("doc", '{"op":"update"}', T0 + 1_000)).toBe(true);
    expect(await store.uploadDocument("doc", "{}", T0 + 2_000)).toBe(false);
    expect(await store.document("doc")).toMatchObject({ content: '{"op":"update"}', uploadedAt: T0 + 1_000 });
    expect(await store.document("none")).toBeUndefined();
  });

  it("reads a job back as domain values: parsed targets and abort config, times in epoch ms", async () => {
    const abortConfig = {
      criteriaList: [
        {
          failureType: "FAILED" as const,
          action: "CANCEL" as const,
          thresholdPercentage: 50,
          minNumberOfExecutedThings: 2,
        },
      ],
    };
    await store.insertJob(
      job("typed", { maximumPerMinute: 5, inProgressTimeoutMinutes: 3, abortConfig, targetSelection: "CONTINUOUS" }),
    );
    await store.addGroups(
      "typed",
      [
        { id: "g1", name: "fleet" },
        { id: "g2", name: "meters" },
      ],
      0,
    );
    await store.addGroups(
      "typed",
      [
        { id: "g1", name: "fleet" },
        { id: "g3", name: "spare" },
      ],
      2,
    );
    expect(await store.job("typed")).toEqual({
      jobId: "typed",
      domain: "acme",
      description: "update",
      comment: null,
      status: "IN_PROGRESS",
      targetSelection: "CONTINUOUS",
      documentId: "doc",
      targetThings: ["t1", "t2"],
      createdAt: T0,
      lastUpdatedAt: T0,
      completedAt: null,
      canceledAt: null,
      maximumPerMinute: 5,
      inProgressTimeoutMinutes: 3,
      abortConfig,
      rolloutWindowStart: 0,
      rolloutWindowCount: 0,
      rolloutNextAt: null,
    });
    expect(await store.groupNames("typed")).toEqual(["fleet", "meters", "spare"]);
    expect((await store.groupIds("typed")).sort()).toEqual(["g1", "g2", "g3"]);
    expect((await store.continuousJobsOf("g2")).map((j) => j.jobId)).toEqual(["typed"]);
    expect(await store.jobs({ status: null, targetSelection: "CONTINUOUS", groupId: "g3" })).toHaveLength(1);
    expect(await store.jobs({ status: "COMPLETED", targetSelection: null, groupId: null })).toEqual([]);

    await store.touchJob("typed", "looked at", T0 + 5_000);
    await store.touchJob("typed", null, T0 + 6_000);
    expect(await store.job("typed")).toMatchObject({ comment: "looked at", lastUpdatedAt: T0 + 6_000 });
    await store.completeJob("typed", T0 + 7_000);
    expect(await store.job("typed")).toMatchObject({ status: "COMPLETED", completedAt: T0 + 7_000 });
    expect(await store.continuousJobsOf("g2")).toEqual([]);
  });

  it("lists jobs newest first, then by id", async () => {
    await store.insertJob(job("list-b", { createdAt: T0 + 60_000 }));
    await store.insertJob(job("list-a", { createdAt: T0 + 60_000 }));
    await store.insertJob(job("list-c", { createdAt: T0 + 120_000 }));
    const ids = (await store.jobs({ status: null, targetSelection: null, groupId: null })).map((j) => j.jobId);
    expect(ids.filter((id) => id.startsWith("list-"))).toEqual(["list-c", "list-a", "list-b"]);
  });

  it("carries an execution through its states with flags as booleans and details as an object", async () => {
    await store.insertJob(job("exec"));
    for (const [i, thing] of ["t3", "t1", "t2"].entries()) await store.queue("exec", thing, 1, 1_000 + i);
    expect(await store.hasUnreleased("exec")).toBe(true);
    expect(await store.pending("t1")).toEqual([]);
    // Oldest queued first, up to the budget.
    expect(await store.release("exec", 2)).toEqual(expect.arrayContaining(["t3", "t1"]));
    expect(await store.release("exec", null)).toEqual(["t2"]);
    expect(await store.hasUnreleased("exec")).toBe(false);

    const queued = (await store.execution("exec", "t1"))!;
    expect(queued).toEqual({
      jobId: "exec",
      thingName: "t1",
      executionNumber: 1,
      status: "QUEUED",
      released: true,
      queuedAt: 1_001,
      startedAt: null,
      lastUpdatedAt: 1_001,
      versionNumber: 1,
      statusDetails: null,
      forceCanceled: false,
      inProgressDeadline: null,
      stepDeadline: null,
      timeoutAt: null,
    });
    await store.updateExecution(queued, {
      status: "IN_PROGRESS",
      startedAt: 2_000,
      lastUpdatedAt: 2_000,
      versionNumber: 2,
      statusDetails: { step: "download", percent: "10" },
      inProgressDeadline: 62_000,
      stepDeadline: 32_000,
      timeoutAt: 32_000,
    });
    expect(await store.execution("exec", "t1", 1)).toMatchObject({
      status: "IN_PROGRESS",
      startedAt: 2_000,
      versionNumber: 2,
      statusDetails: { step: "download", percent: "10" },
      timeoutAt: 32_000,
    });
    expect(await store.execution("exec", "t1", 2)).toBeUndefined();
    // A thing's running execution comes before its queued ones.
    await store.insertJob(job("exec-2"));
    await store.queue("exec-2", "t1", 1, 500);
    await store.release("exec-2", null);
    expect((await store.pending("t1")).map((e) => [e.jobId, e.status])).toEqual([
      ["exec", "IN_PROGRESS"],
      ["exec-2", "QUEUED"],
    ]);

    await store.cancelExecution((await store.execution("exec", "t2"))!, true, 3_000);
    expect(await store.execution("exec", "t2")).toMatchObject({ status: "CANCELED", forceCanceled: true });
    await store.markRemoved((await store.execution("exec", "t3"))!, 3_000);
    await store.queue("exec", "t3", 2, 3_500);
    expect(await store.execution("exec", "t3")).toMatchObject({ executionNumber: 2, released: false });
    // Each thing counts once, by its latest execution.
    expect(Object.fromEntries(await store.statusCounts("exec"))).toEqual({ IN_PROGRESS: 1, CANCELED: 1, QUEUED: 1 });
    expect((await store.executions("exec", null)).map((e) => `${e.thingName}#${e.executionNumber}`)).toEqual([
      "t1#1",
      "t2#1",
      "t3#1",
      "t3#2",
    ]);
    expect((await store.executions("exec", "REMOVED")).map((e) => e.thingName)).toEqual(["t3"]);

    expect(await store.cancelJob("exec", "stop", 4_000)).toEqual([{ thingName: "t3", released: false }]);
    expect(await store.job("exec")).toMatchObject({ status: "CANCELED", canceledAt: 4_000, comment: "stop" });
    expect(await store.hasOpen("exec")).toBe(true);
    expect(await store.removeOpenOf("t1", 5_000)).toEqual(expect.arrayContaining(["exec", "exec-2"]));
    expect(await store.hasOpen("exec")).toBe(false);

    await store.deleteExecution((await store.execution("exec", "t3", 1))!);
    expect(await store.execution("exec", "t3", 1)).toBeUndefined();
    await store.queue("exec-2", "t2", 1, 6_000);
    await store.release("exec-2", null);
    expect(await store.deleteJob("exec-2")).toEqual(["t2"]);
    expect(await store.job("exec-2")).toBeUndefined();
    expect(await store.executions("exec-2", null)).toEqual([]);
  });

  it("answers the timers' due work: rollout windows and executions past their timeout", async () => {
    const due = await store.nextDue();
    await store.insertJob(job("timers"));
    await store.queue("timers", "t1", 1, 1_000);
    await store.queue("timers", "t2", 1, 1_000);
    await store.setRolloutWindow("timers", 1_000, 1, 61_000);
    const t1 = (await store.execution("timers", "t1"))!;
    await store.updateExecution(t1, {
      status: "IN_PROGRESS",
      startedAt: 1_000,
      lastUpdatedAt: 1_000,
      versionNumber: 1,
      statusDetails: null,
      inProgressDeadline: 41_000,
      stepDeadline: null,
      timeoutAt: 41_000,
    });
    expect(await store.nextDue()).toBe(Math.min(due ?? Infinity, 41_000));
    expect(await store.job("timers")).toMatchObject({ rolloutWindowStart: 1_000, rolloutWindowCount: 1 });
    expect((await store.dueRollouts(60_999)).map((j) => j.jobId)).not.toContain("timers");
    expect((await store.dueRollouts(61_000)).map((j) => j.jobId)).toContain("timers");
    expect((await store.lateExecutions(40_999)).filter((e) => e.jobId === "timers")).toEqual([]);
    expect((await store.lateExecutions(41_000)).filter((e) => e.jobId === "timers").map((e) => e.thingName)).toEqual([
      "t1",
    ]);
  });

  it("prunes finished executions only, the longest finished first, a batch at a time", async () => {
    await store.insertJob(job("aged"));
    for (const [thing, at] of [
      ["t1", 10],
      ["t2", 20],
      ["t3", 30],
      ["t4", 40],
    ] as const) {
      await store.queue("aged", thing, 1, at);
    }
    const finish = async (thing: string, status: "SUCCEEDED" | "FAILED" | "IN_PROGRESS", at: number) =>
      store.updateExecution((await store.execution("aged", thing))!, {
        status,
        startedAt: at,
        lastUpdatedAt: at,
        versionNumber: 2,
        statusDetails: null,
        inProgressDeadline: null,
        stepDeadline: null,
        timeoutAt: null,
      });
    await finish("t1", "SUCCEEDED", 100);
    await finish("t2", "FAILED", 50);
    await finish("t3", "IN_PROGRESS", 10);
    // t4 stays QUEUED (last changed at 40): open executions are kept whatever their age.
    expect(await store.pruneFinished(200, 1)).toBe(1);
    expect((await store.executions("aged", null)).map((e) => e.thingName)).toEqual(["t1", "t3", "t4"]);
    expect(await store.pruneFinished(100, 10)).toBe(0);
    expect(await store.pruneFinished(101, 10)).toBe(1);
    expect((await store.executions("aged", null)).map((e) => e.thingName)).toEqual(["t3", "t4"]);
  });

  it("a transaction commits all of its work or, when it throws, none of it", async () => {
    await store.transaction(async () => {
      await store.insertJob(job("kept"));
      await store.queue("kept", "t1", 1, 1_000);
    });
    await expect(
      store.transaction(async () => {
        await store.insertJob(job("gone"));
        await store.queue("gone", "t1", 1, 1_000);
        throw new Error("rolled back");
      }),
    ).rejects.toThrow("rolled back");
    expect(await store.job("gone")).toBeUndefined();
    expect(await store.executions("gone", null)).toEqual([]);
    expect(await store.job("kept")).toMatchObject({ status: "IN_PROGRESS" });
    expect(await store.release("kept", null)).toEqual(["t1"]);
  });

  it("a statement of another request, begun in the caller's turn, stays out of the transaction", async () => {
    const failed = store.transaction(async () => {
      await store.insertJob(job("interleaved"));
      await store.queue("interleaved", "t1", 1, 1_000);
      throw new Error("rolled back");
    });
    // Another request's store calls, queued in the same turn: they must neither join the
    // transaction (and be rolled back with it) nor wait for it to end.
    const foreign = Promise.resolve()
      .then(() => store.insertJob(job("foreign-1")))
      .then(() => store.insertJob(job("foreign-2")));
    await expect(failed).rejects.toThrow("rolled back");
    await foreign;
    expect(await store.job("interleaved")).toBeUndefined();
    expect(await store.job("foreign-1")).toMatchObject({ status: "IN_PROGRESS" });
    expect(await store.job("foreign-2")).toMatchObject({ status: "IN_PROGRESS" });
  });

  it("transactions started together run one after the other, each seeing the one before", async () => {
    await store.insertJob(job("serial"));
    const order: string[] = [];
    const step = (thingName: string) =>
      store.transaction(async () => {
        order.push(`begin ${thingName}`);
        const latest = await store.execution("serial", "t1");
        await store.queue("serial", "t1", (latest?.executionNumber ?? 0) + 1, 1_000);
        order.push(`end ${thingName}`);
        return thingName;
      });
    expect(await Promise.all([step("a"), step("b"), step("c")])).toEqual(["a", "b", "c"]);
    expect(order).toEqual(["begin a", "end a", "begin b", "end b", "begin c", "end c"]);
    expect((await store.executions("serial", null)).map((e) => e.executionNumber)).toEqual([1, 2, 3]);
  });

  it("transactions of two processes on one database never interleave their reads and writes", async () => {
    await store.insertJob(job("shared"));
    const step = (s: JobStore) =>
      s.transaction(async () => {
        const latest = await s.execution("shared", "t1");
        await s.queue("shared", "t1", (latest?.executionNumber ?? 0) + 1, 1_000);
      });
    await Promise.all(Array.from({ length: 12 }, (_, n) => step(n % 2 ? store : other)));
    expect((await other.executions("shared", null)).map((e) => e.executionNumber)).toEqual(
      Array.from({ length: 12 }, (_, n) => n + 1),
    );
  });
});
