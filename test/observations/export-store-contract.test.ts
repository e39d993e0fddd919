import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createMailer } from "../../src/mail/index.js";
import {
  ExportRunner,
  ExportScheduler,
  ExportService,
  PgExportStore,
  SqliteExportStore,
  exportMigrations,
  exportPgMigrations,
  openObservations,
  type ExportJob,
  type ExportStore,
} from "../../src/observations/index.js";
import { localExportFiles, type ExportExecution } from "../../src/observations/export/index.js";
import { storeBackends } from "../support/backends.js";
import { openParts, type Parts } from "../support/parts.js";

/** One contract, every implementation of the export store seam: what the export service, runner and scheduler rely on. */
const backends = storeBackends<ExportStore>({
  sqlite: { migrations: exportMigrations, store: (db) => new SqliteExportStore(db) },
  pg: { migrations: exportPgMigrations, store: (pool) => new PgExportStore(pool) },
});

const T = Date.parse("2026-03-01T10:00:00.000Z");

function job(id: string, over: Partial<ExportJob> = {}): ExportJob {
  return {
    id,
    jobName: `job ${id}`,
    type: "scheduled",
    thingType: "10",
    schedule: "cron(0 0/1 * * ? *)",
    timePeriod: "1h",
    resources: ["temp", "humidity"],
    enabled: true,
    createdAt: "2026-03-01T09:00:00.000Z",
    updatedAt: "2026-03-01T09:00:00.000Z",
    ...over,
  };
}

function execution(id: string, jobId: string, over: Partial<ExportExecution> = {}): Omit<ExportExecution, "seq"> {
  return {
    id,
    jobId,
    owner: "alice",
    status: "QUEUED",
    submissionDateTime: "2026-03-01T10:00:01.234Z",
    completionDateTime: "",
    dataScannedInBytes: 0,
    engineExecutionTimeInMillis: 0,
    executionFileName: `${id}.csv.gz`,
    windowFrom: T - 3_600_000,
    windowTo: T,
    ...over,
  };
}

describe.each(backends)("export store contract: $name", (backend) => {
  let store: ExportStore;
  beforeAll(async () => {
    store = await backend.open();
  });
  afterAll(() => backend.close());

  it("keeps a job as written with its owner and next fire, and changes both", async () => {
    const written = job("j1", { things: ["t2", "t1"], notifyByEmail: true, recipients: "a@b.c" });
    await store.insertJob("alice", written, T + 3_600_000);
    expect(await store.job("j1")).toEqual({ job: written, owner: "alice", nextFire: T + 3_600_000 });
    expect(JSON.stringify((await store.job("j1"))!.job)).toBe(JSON.stringify(written));
    const changed = { ...written, enabled: false, updatedAt: "2026-03-01T09:30:00.000Z" };
    await store.updateJob(changed, null);
    expect(await store.job("j1")).toEqual({ job: changed, owner: "alice", nextFire: null });
    await store.setNextFire("j1", T + 1);
    expect((await store.job("j1"))!.nextFire).toBe(T + 1);
    expect(await store.job("none")).toBeUndefined();
  });

  it("answers the jobs due at or before a time, earliest first", async () => {
    await store.insertJob("bob", job("due-b"), T + 20);
    await store.insertJob("bob", job("due-a"), T + 10);
    await store.insertJob("bob", job("due-later"), T + 1000);
    await store.insertJob("bob", job("due-never", { enabled: false }), null);
    const due = await store.dueJobs(T + 20);
    expect(due.map((d) => [d.job.id, d.nextFire])).toEqual([
      ["j1", T + 1],
      ["due-a", T + 10],
      ["due-b", T + 20],
    ]);
    expect(due[1]).toEqual({ job: job("due-a"), owner: "bob", nextFire: T + 10 });
  });

  it("pages an owner's jobs by creation, both ways, from a marker", async () => {
    for (const id of ["p1", "p2", "p3"]) await store.insertJob("carol", job(id), null);
    const first = await store.jobs("carol", { size: 2, order: "asc" });
    expect(first.items.map((j) => j.id)).toEqual(["p1", "p2"]);
    expect(first.hasNext).toBe(true);
    expect(typeof first.last).toBe("number");
    const second = await store.jobs("carol", { size: 2, order: "asc", marker: first.last! });
    expect(second).toMatchObject({ items: [job("p3")], hasNext: false });
    const desc = await store.jobs("carol", { size: 5, order: "desc" });
    expect(desc.items.map((j) => j.id)).toEqual(["p3", "p2", "p1"]);
    expect(desc.hasNext).toBe(false);
    expect(
      (await store.jobs("carol", { size: 5, order: "desc", marker: second.last! })).items.map((j) => j.id),
    ).toEqual(["p2", "p1"]);
    expect(await store.jobs("nobody", { size: 5, order: "asc" })).toEqual({
      items: [],
      last: undefined,
      hasNext: false,
    });
  });

  it("keeps executions in domain types, pages them per owner and job, and moves them on unless cancelled", async () => {
    await store.insertJob("alice", job("ej"), null);
    // e1's runner is gone (its claim ended at T), e2's holds it a minute longer.
    await store.insertExecution(execution("e1", "ej"), { holder: "gone", until: T });
    await store.insertExecution(execution("e2", "ej", { status: "RUNNING" }), { holder: "live", until: T + 60_000 });
    await store.insertExecution(execution("e3", "other", { status: "SUCCEEDED", dataScannedInBytes: 2 ** 40 }), {
      holder: "gone",
      until: T,
    });
    const e1 = await store.execution("e1");
    expect(e1).toEqual({ ...execution("e1", "ej"), seq: e1!.seq });
    expect(typeof e1!.seq).toBe("number");
    expect((await store.execution("e3"))!.dataScannedInBytes).toBe(2 ** 40);
    expect(await store.execution("none")).toBeUndefined();

    const page = await store.executions("alice", "ej", { size: 1, order: "desc" });
    expect(page.items.map((e) => e.id)).toEqual(["e2"]);
    expect(page.hasNext).toBe(true);
    expect(
      (await store.executions("alice", "ej", { size: 1, order: "desc", marker: page.last! })).items.map((e) => e.id),
    ).toEqual(["e1"]);
    expect((await store.executions("alice", undefined, { size: 9, order: "asc" })).items.map((e) => e.id)).toEqual([
      "e1",
      "e2",
      "e3",
    ]);
    expect((await store.openExecutions(T)).map((e) => e.id)).toEqual(["e1"]);
    expect((await store.openExecutions(T + 60_000)).map((e) => e.id)).toEqual(["e1", "e2"]);

    expect(await store.transition("e1", "RUNNING")).toBe(true);
    expect(
      await store.transition("e1", "SUCCEEDED", {
        completion: "2026-03-01T10:05:00.000Z",
        dataScanned: 123,
        engineMs: 45,
      }),
    ).toBe(true);
    expect(await store.execution("e1")).toMatchObject({
      status: "SUCCEEDED",
      completionDateTime: "2026-03-01T10:05:00.000Z",
      dataScannedInBytes: 123,
      engineExecutionTimeInMillis: 45,
    });
    expect(await store.transition("e2", "CANCELLED", { completion: "2026-03-01T10:06:00.000Z" })).toBe(true);
    expect(await store.transition("e2", "SUCCEEDED", { completion: "2026-03-01T10:07:00.000Z" })).toBe(false);
    expect(await store.execution("e2")).toMatchObject({
      status: "CANCELLED",
      completionDateTime: "2026-03-01T10:06:00.000Z",
    });
    expect(await store.transition("none", "RUNNING")).toBe(false);
    expect(await store.openExecutions(T + 60_000)).toEqual([]);

    expect((await store.executionsOfJob("ej")).map((e) => e.id).sort()).toEqual(["e1", "e2"]);
    await store.deleteJob("ej");
    expect(await store.job("ej")).toBeUndefined();
    expect(await store.executionsOfJob("ej")).toEqual([]);
    expect(await store.execution("e3")).toBeDefined();
  });

  it("gives an open execution to one runner at a time, to another once its claim ends or is handed back", async () => {
    await store.insertJob("alice", job("cj"), null);
    await store.insertExecution(execution("c1", "cj"), { holder: "a", until: T + 10_000 });
    await store.insertExecution(execution("c2", "cj"), { holder: "a", until: T + 10_000 });
    expect(await store.claimExecution("c1", { holder: "b", until: T + 30_000 }, T + 5000)).toBe(false);
    expect(await store.claimExecution("c1", { holder: "a", until: T + 30_000 }, T + 5000)).toBe(true);
    expect(await store.execution("c1")).toMatchObject({ status: "RUNNING" });
    // Renewed: still a's after the first claim would have ended.
    expect((await store.renewExecutionClaims("a", T + 40_000)).sort()).toEqual(["c1", "c2"]);
    expect(await store.claimExecution("c2", { holder: "b", until: T + 60_000 }, T + 39_999)).toBe(false);
    expect((await store.openExecutions(T + 39_999)).map((e) => e.id)).toEqual([]);
    // a stops renewing: b takes both once the claims end.
    expect((await store.openExecutions(T + 40_000)).map((e) => e.id)).toEqual(["c1", "c2"]);
    expect(await store.claimExecution("c1", { holder: "b", until: T + 70_000 }, T + 40_000)).toBe(true);
    expect(await store.renewExecutionClaims("a", T + 80_000)).toEqual(["c2"]);
    // Handed back (renewed for no time): the next runner need not wait.
    expect(await store.renewExecutionClaims("a", 0)).toEqual(["c2"]);
    expect(await store.claimExecution("c2", { holder: "b", until: T + 70_000 }, T + 40_001)).toBe(true);
    // Finished or cancelled executions are nobody's.
    expect(await store.transition("c1", "SUCCEEDED")).toBe(true);
    expect(await store.transition("c2", "CANCELLED")).toBe(true);
    expect(await store.renewExecutionClaims("b", T + 90_000)).toEqual([]);
    expect(await store.claimExecution("c2", { holder: "b", until: T + 90_000 }, T + 40_002)).toBe(false);
  });

  it("gives the schedule lease to one holder at a time, to another once it expires or is handed back", async () => {
    expect(await store.holdScheduleLease("a", T, 10_000)).toBe(true);
    expect(await store.holdScheduleLease("b", T + 1000, 10_000)).toBe(false);
    expect(await store.holdScheduleLease("a", T + 5000, 10_000)).toBe(true);
    // Renewed at T + 5 s: still a's at T + 14.999 s, free at T + 15 s.
    expect(await store.holdScheduleLease("b", T + 14_999, 10_000)).toBe(false);
    expect(await store.holdScheduleLease("b", T + 15_000, 10_000)).toBe(true);
    expect(await store.holdScheduleLease("a", T + 16_000, 10_000)).toBe(false);
    // Handed back (renewed for no time): the next holder need not wait.
    expect(await store.holdScheduleLease("b", T + 17_000, 0)).toBe(true);
    expect(await store.holdScheduleLease("a", T + 17_000, 10_000)).toBe(true);
  });
});

describe.each(backends)("export schedules across processes on one database: $name", (backend) => {
  let parts: Parts;
  let dataDir: string;
  let now = Date.parse("2026-03-01T10:00:30Z");
  const clock = (): number => now;
  let processes: { store: ExportStore; runner: ExportRunner; scheduler: ExportScheduler; service: ExportService }[];

  beforeAll(async () => {
    parts = await openParts();
    dataDir = mkdtempSync(join(tmpdir(), "dms-export-lease-"));
    const reader = openObservations({ dataDir: ":memory:", db: parts.db, writerThread: false }).reader;
    const files = localExportFiles(dataDir);
    processes = (await backend.openPair()).map((store) => {
      const runner = new ExportRunner({
        store,
        reader,
        files,
        mailer: createMailer(undefined, "dms@test", parts.logger),
        logger: parts.logger,
        clock,
        downloadUrl: (id) => `http://127.0.0.1/${id}`,
      });
      const service = new ExportService({
        store,
        runner,
        files,
        registry: parts.registry,
        clock,
        logger: parts.logger,
      });
      const scheduler = new ExportScheduler({ store, service, runner, clock, logger: parts.logger, tickMs: 50 });
      return { store, runner, scheduler, service };
    });
  });
  afterAll(async () => {
    for (const p of processes) {
      await p.scheduler.stop();
      await p.runner.stop();
    }
    await backend.close();
    parts.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("two schedulers, one due schedule: exactly one run; when its holder stops, the other fires the next", async () => {
    const [a, b] = processes as [(typeof processes)[0], (typeof processes)[0]];
    const created = await a.service.create(parts.as("alice"), {
      jobName: "hourly",
      type: "scheduled",
      thingType: "10",
      schedule: "cron(0 0/1 * * ? *)",
      timePeriod: "1h",
      resources: ["temp"],
    });
    now = Date.parse("2026-03-01T11:00:05Z");
    const ticks = await Promise.all([a, b, a, b, a, b].map((p) => p.scheduler.tick()));
    expect(ticks.reduce((x, y) => x + y, 0)).toBe(1);
    const executions = await a.store.executionsOfJob(created.id);
    expect(executions).toHaveLength(1);
    expect(executions[0]).toMatchObject({
      windowFrom: Date.parse("2026-03-01T10:00:00Z"),
      windowTo: Date.parse("2026-03-01T11:00:00Z"),
    });
    // The same store answers both processes: the next fire is set once.
    expect((await b.store.job(created.id))!.nextFire).toBe(Date.parse("2026-03-01T12:00:00Z"));

    // One holds the lease; the other's ticks fire nothing even when the next fire is due.
    const holder = (await a.store.holdScheduleLease(a.scheduler.holder, now, 10_000)) ? a : b;
    const other = holder === a ? b : a;
    now = Date.parse("2026-03-01T11:59:59Z");
    expect(await holder.scheduler.tick()).toBe(0);
    now = Date.parse("2026-03-01T12:00:05Z");
    expect(await other.scheduler.tick()).toBe(0);
    // The holder stops (hands the lease back): the other fires the due schedule, once.
    await holder.scheduler.stop();
    expect(await other.scheduler.tick()).toBe(1);
    expect(await other.scheduler.tick()).toBe(0);
    expect(await other.store.executionsOfJob(created.id)).toHaveLength(2);
    await a.runner.idle();
    await b.runner.idle();
  });

  it("a holder that dies without handing the lease back is replaced once the lease expires", async () => {
    const [a, b] = processes as [(typeof processes)[0], (typeof processes)[0]];
    // A process that died holding the lease: its name on the lease, renewed now, never again.
    now = Date.parse("2026-03-01T12:30:00Z");
    expect(await a.store.holdScheduleLease("dead-process", now, 10_000)).toBe(true);
    now = Date.parse("2026-03-01T13:00:05Z");
    expect(await a.store.holdScheduleLease("dead-process", Date.parse("2026-03-01T13:00:00Z"), 10_000)).toBe(true);
    expect(await a.scheduler.tick()).toBe(0);
    expect(await b.scheduler.tick()).toBe(0);
    now = Date.parse("2026-03-01T13:00:10Z");
    const fired = (await a.scheduler.tick()) + (await b.scheduler.tick());
    expect(fired).toBe(1);
    await a.runner.idle();
    await b.runner.idle();
  });

  it("runs an execution in the runner that holds it; another takes it once the claim ends or is handed back", async () => {
    const [a, b] = processes as [(typeof processes)[0], (typeof processes)[0]];
    now = Date.parse("2026-03-01T14:00:00Z");
    await a.store.insertJob("alice", job("held"), null);
    const status = async (id: string): Promise<string | undefined> => (await b.store.execution(id))?.status;
    // Queued in a's runner (a busy with another): b's resume leaves them to a.
    for (const id of ["h1", "h2"]) {
      await a.store.insertExecution(
        execution(id, "held", { windowFrom: now - 3_600_000, windowTo: now }),
        a.runner.claim(),
      );
    }
    await b.runner.resume();
    await b.runner.idle();
    expect([await status("h1"), await status("h2")]).toEqual(["QUEUED", "QUEUED"]);
    // a dies with h1 (its claim is never renewed): b's scheduler takes it over once the claim ends.
    await a.store.renewExecutionClaims(a.runner.holder, now + 1000);
    now += 1000;
    await b.scheduler.tick();
    await b.runner.idle();
    expect(await status("h1")).toBe("SUCCEEDED");
    expect(await status("h2")).toBe("SUCCEEDED");
  });

  it("a runner that stops hands its claims back: another takes them at once", async () => {
    const [a, b] = processes as [(typeof processes)[0], (typeof processes)[0]];
    await a.store.insertExecution(
      execution("h3", "held", { windowFrom: now - 3_600_000, windowTo: now }),
      a.runner.claim(),
    );
    await b.runner.resume();
    await b.runner.idle();
    expect((await b.store.execution("h3"))?.status).toBe("QUEUED");
    await a.runner.stop();
    await b.runner.resume();
    await b.runner.idle();
    expect((await b.store.execution("h3"))?.status).toBe("SUCCEEDED");
  });
});
