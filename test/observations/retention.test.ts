import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RetentionSweeper } from "../../src/store/index.js";
import { retentionTargets } from "../../src/retention.js";
import { FINISHED_SQL } from "../../src/jobs/index.js";
import { startTestDms, type TestDms } from "../support/dms.js";
import { storedObservations } from "../support/observations.js";
import { until } from "../support/wait.js";

const HOUR = 3_600_000;
const NOW = 1_800_000_000_000;
/** The last instant kept: a row is deleted when it is older than the window, strictly. */
const EDGE = NOW - HOUR;

let t: TestDms;
beforeAll(async () => {
  t = await startTestDms({
    env: {
      DMS_ROLES: "api,engine,scheduler",
      DMS_OBSERVATION_RETENTION: "1h",
      DMS_DEAD_LETTER_RETENTION: "60m",
      DMS_EVENT_RETENTION: "3600s",
      DMS_JOB_EXECUTION_RETENTION: "1h",
    },
    start: { clock: () => NOW },
  });
});
afterAll(() => t.close());

const count = (sql: string): number => t.dms.services.db!.prepare<[], { n: number }>(sql).get()!.n;
/** The timestamps of every stored observation, ascending (observations have a file of their own). */
const observationTimestamps = (): number[] =>
  storedObservations(t)
    .map((o) => o.document.timestamp)
    .sort((a, b) => a - b);
const timestamps = (sql: string): number[] =>
  t.dms.services
    .db!.prepare<[], { ts: number }>(sql)
    .all()
    .map((r) => r.ts);

describe("retention", () => {
  it("deletes exactly what is older than each window, in batches, and keeps the rest", async () => {
    // The service's own sweeper would race this test's: it gets its turn in the last test.
    await t.dms.services.retention!.stop();
    const db = t.dms.services.db!;
    // 50 observations of a day long gone (its table dropped whole), 2,500 old ones of the day the
    // cutoff cuts (several batches of 100 below), then the edge: older by 1 ms, exactly at, newer.
    const gone = Array.from({ length: 50 }, (_, i) => NOW - 3 * 24 * HOUR - i);
    const old = Array.from({ length: 2500 }, (_, i) => EDGE - 10_000 - i);
    const edge = [EDGE - 1, EDGE, EDGE + 1, NOW];
    await t.dms.services.observations.insertBatch(
      [...gone, ...old, ...edge].map((timestamp) => ({
        document: { thingName: "t1", thingType: "10", domain: "acme", timestamp, state: { temp: 1 } },
      })),
    );
    await t.dms.services.engine!.deadLetters.insertBatch(
      edge.map((createdAt) => ({ source: "http", reason: "not-json" as const, message: "x", createdAt })),
    );
    const event = db.prepare(
      `INSERT INTO events (idempotency_key, rule_id, thing_name, thing_type, domain, classification, message,
         acknowledgment_required, ts) VALUES (?, 'r', 't1', '10', 'acme', 'ALARM', 'm', 0, ?)`,
    );
    for (const ts of edge) event.run(`k${ts}`, ts);
    db.prepare(
      `INSERT INTO job_documents (document_id, document_name, domain, created_at, upload_expires_at)
       VALUES ('d', 'd', 'acme', '2020-01-01T00:00:00Z', 0)`,
    ).run();
    db.prepare(
      `INSERT INTO thing_jobs (job_id, domain, description, status, target_selection, document_id, target_things,
         created_at, last_updated_at) VALUES ('j', 'acme', 'd', 'IN_PROGRESS', 'SNAPSHOT', 'd', '[]', 'x', 'x')`,
    ).run();
    const execution = db.prepare(
      `INSERT INTO job_executions (job_id, thing_name, execution_number, status, released, queued_at,
         last_updated_at, version_number) VALUES ('j', ?, 1, ?, 1, 0, ?, 1)`,
    );
    edge.forEach((ts, i) => execution.run(`done-${i}`, "SUCCEEDED", ts));
    // Running for longer than the window: not finished, so kept however old.
    execution.run("running", "IN_PROGRESS", EDGE - HOUR);

    const sweeper = new RetentionSweeper({
      targets: retentionTargets(t.dms.services.config, t.dms.services.stores),
      clock: () => NOW,
      logger: t.dms.services.logger,
      batchSize: 100,
    });
    expect(await sweeper.sweep()).toEqual({
      observations: 2551,
      "dead-letters": 1,
      events: 1,
      "job-executions": 1,
    });
    expect(observationTimestamps()).toEqual([EDGE, EDGE + 1, NOW]);
    expect(timestamps("SELECT created_at AS ts FROM engine_dead_letters ORDER BY ts")).toEqual([EDGE, EDGE + 1, NOW]);
    expect(timestamps("SELECT ts FROM events ORDER BY ts")).toEqual([EDGE, EDGE + 1, NOW]);
    expect(count("SELECT count(*) AS n FROM job_executions WHERE thing_name = 'running'")).toBe(1);
    expect(count("SELECT count(*) AS n FROM job_executions")).toBe(4);
    // Nothing left to do: a second sweep deletes nothing.
    expect(Object.values(await sweeper.sweep())).toEqual([0, 0, 0, 0]);
  });

  it("the SQLite stores answer each batch's condition from an index, not a scan of the table", () => {
    // What the dead-letter, event and job stores' deleteOlderThan run (oldestRowsRemover); the
    // observations' store drops whole days and deletes the cut day's rows by its ts index.
    const conditions = [
      ["engine_dead_letters", "created_at < ?", "created_at"],
      ["events", "ts < ?", "ts"],
      ["job_executions", `status IN (${FINISHED_SQL}) AND last_updated_at < ?`, "last_updated_at"],
    ];
    for (const [table, olderThan, orderBy] of conditions) {
      const plan = t.dms.services
        .db!.prepare<[number, number], { detail: string }>(
          `EXPLAIN QUERY PLAN SELECT rowid FROM ${table} WHERE ${olderThan} ORDER BY ${orderBy} LIMIT ?`,
        )
        .all(0, 1)
        .map((r) => r.detail)
        .join("; ");
      expect(plan, table).toMatch(/USING (COVERING )?INDEX/);
      expect(plan, table).not.toMatch(/TEMP B-TREE/);
    }
  });

  it("the sweeper of a scheduler process deletes in the background and counts it in /metrics", async () => {
    await t.dms.services.observations.insertBatch([
      { document: { thingName: "t1", thingType: "10", domain: "acme", timestamp: EDGE - 5, state: {} } },
    ]);
    // Started, it sweeps at once and then every minute.
    await t.dms.services.retention!.start();
    await until(() => !observationTimestamps().includes(EDGE - 5), 10_000);
    expect(observationTimestamps().filter((ts) => ts === EDGE)).toHaveLength(1);
    const metrics = await (await fetch(`${t.url}/metrics`)).text();
    expect(metrics).toMatch(/dms_retention_deleted_total\{kind="observations"\} [1-9]/);
  });
});
