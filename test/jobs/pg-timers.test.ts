import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventBus } from "../../src/bus/index.js";
import { JobDocuments, PgJobStore, ThingJobs, jobsPgMigrations, type NewJob } from "../../src/jobs/index.js";
import { openPgPool, type PgPool } from "../../src/store/index.js";
import { openParts, type Parts } from "../support/parts.js";
import { createPgDatabase, pgDatabaseUrl, type PgDatabase } from "../support/postgres.js";

/**
 * Two processes' thing jobs on one PostgreSQL database, each with a pool of its own: a rollout
 * window or a timeout that falls due is handled by one of them, once.
 */

const MINUTE = 60_000;
const everything = { thing: () => true, group: () => true };

let parts: Parts;
let database: PgDatabase;
let secondPool: PgPool;
let now = Date.parse("2026-03-01T00:00:00.000Z");
const clock = (): number => now;
let processes: { jobs: ThingJobs; touched: string[] }[];

beforeAll(async () => {
  parts = await openParts();
  database = await createPgDatabase(jobsPgMigrations);
  secondPool = openPgPool(pgDatabaseUrl(database.name));
  processes = [database.pool, secondPool].map((pool, n) => {
    const store = new PgJobStore(pool);
    const jobs = new ThingJobs({
      store,
      registry: parts.registry,
      bus: n === 0 ? parts.bus : new EventBus(),
      documents: new JobDocuments(store, parts.signer, clock),
      clock,
      logger: parts.logger,
    });
    const touched: string[] = [];
    jobs.onPendingChanged((things) => touched.push(...things));
    return { jobs, touched };
  });
});
afterAll(async () => {
  for (const p of processes) p.jobs.close();
  await secondPool.end();
  await database.drop();
  parts.close();
});

describe("job timers across processes sharing a PostgreSQL database", () => {
  it("a due rollout window and a due timeout each fire in one process only", async () => {
    const [a, b] = processes as [(typeof processes)[number], (typeof processes)[number]];
    const store = new PgJobStore(database.pool);
    await store.insertDocument({
      documentId: "doc",
      documentName: "firmware",
      domain: "acme",
      createdAt: now,
      uploadExpiresAt: now + MINUTE,
    });
    await store.uploadDocument("doc", '{"op":"update"}', now);
    const base: NewJob = {
      domain: "acme",
      description: "update",
      targetSelection: "SNAPSHOT",
      jobDocumentId: "doc",
      targets: { things: ["t1", "t2"] },
    };
    // One execution a minute: t1 at once, t2 in the next window.
    const rolling = await a.jobs.create({ ...base, maximumPerMinute: 1 }, everything);
    // An execution that times out a minute after it starts.
    const timed = await a.jobs.create(
      { ...base, targets: { things: ["t1"] }, timeoutConfig: { inProgressTimeoutInMinutes: 1 } },
      everything,
    );
    const started = (await a.jobs.executionRow(timed.jobId, "t1"))!;
    await a.jobs.mutate(() => a.jobs.transition(started, "IN_PROGRESS", now, { byDevice: true }));
    a.touched.length = 0;

    now += MINUTE + 1;
    const fired = await Promise.all([a.jobs.runDue(), b.jobs.runDue(), a.jobs.runDue(), b.jobs.runDue()]);
    expect(fired.reduce((x, y) => x + y, 0)).toBe(2);
    expect([...a.touched, ...b.touched].sort()).toEqual(["t1", "t2"]);
    expect(await b.jobs.execution(rolling.jobId, "t2")).toMatchObject({ status: "QUEUED" });
    expect((await b.jobs.pending("t2")).map((e) => e.jobId)).toEqual([rolling.jobId]);
    expect(await b.jobs.execution(timed.jobId, "t1")).toMatchObject({ status: "TIMED_OUT", versionNumber: 2 });
    expect(await a.jobs.describe(timed.jobId)).toMatchObject({ status: "COMPLETED" });
    expect(await a.jobs.nextDue()).toBeUndefined();
  });
});
