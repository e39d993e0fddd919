import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createMailer } from "../../src/mail/index.js";
import { createExports, localExportFiles, type Exports } from "../../src/observations/index.js";
import { openParts, refusal, type Parts } from "../support/parts.js";

/** The exports capability made from its parts on SQLite (no service, no HTTP): access rules, store, scheduler. */

let parts: Parts;
let exports: Exports;
let dataDir: string;
let now = Date.parse("2026-03-01T10:00:30Z");

beforeAll(async () => {
  parts = await openParts();
  dataDir = mkdtempSync(join(tmpdir(), "dms-export-unit-"));
  exports = createExports({
    store: parts.stores.exports,
    reader: parts.stores.observations.reader,
    registry: parts.registry,
    mailer: createMailer(undefined, "dms@test", parts.logger),
    logger: parts.logger,
    clock: () => now,
    files: localExportFiles(dataDir),
    signer: parts.signer,
  });
});
afterAll(async () => {
  await exports.runner.stop();
  await parts.close();
  rmSync(dataDir, { recursive: true, force: true });
});

/** An hour of two of acme's things. */
const instant = {
  jobName: "pair",
  type: "instant",
  things: ["t1", "t2"],
  resources: ["temp"],
  from: "2026-02-01T00:00:00Z",
  to: "2026-02-01T01:00:00Z",
};

describe("exports: the service on the SQLite store", () => {
  it("CREATE needs ReadWrite and DataExport.CREATE, and things the caller may read", async () => {
    expect(await refusal(() => exports.service.create(parts.as("reader"), instant))).toBe("NOT_AUTHORIZED");
    expect(await refusal(() => exports.service.create(parts.as("eastie"), instant))).toBe("THING_NOT_FOUND");
    const job = await exports.service.create(parts.as("alice"), instant);
    await exports.runner.idle();
    const { exportJobExecutions } = await exports.service.executions(parts.as("alice"), job.id, {
      size: 10,
      order: "asc",
    });
    expect(exportJobExecutions).toHaveLength(1);
    expect(exportJobExecutions[0]!.status).toBe("SUCCEEDED");
    // The CSV of no rows is its header, gzipped.
    expect(await exports.files.size(exportJobExecutions[0]!.id)).toBeGreaterThan(0);
  });

  it("jobs and executions are their owner's: another user is answered NOT_FOUND", async () => {
    const job = await exports.service.create(parts.as("alice"), { ...instant, jobName: "mine" });
    expect(await refusal(() => exports.service.get(parts.as("admin"), job.id))).toBe("EXPORT_JOB_NOT_FOUND");
    expect((await exports.service.list(parts.as("admin"), { size: 10, order: "asc" })).exportJobs).toEqual([]);
    await exports.runner.idle();
    await exports.service.delete(parts.as("alice"), job.id);
    expect(await exports.store.job(job.id)).toBeUndefined();
    expect(await exports.store.executionsOfJob(job.id)).toEqual([]);
  });

  it("the scheduler fires a due job once for the window up to its latest missed fire, and sets its next fire", async () => {
    const job = await exports.service.create(parts.as("alice"), {
      jobName: "hourly",
      type: "scheduled",
      thingType: "10",
      schedule: "cron(0 0/1 * * ? *)",
      timePeriod: "1h",
      resources: ["temp"],
    });
    const first = (await exports.store.job(job.id))!.nextFire!;
    expect(first).toBe(Date.parse("2026-03-01T11:00:00Z"));
    expect(await exports.scheduler.tick()).toBe(0);
    // Three fires missed: one execution, for the hour before the latest.
    now = Date.parse("2026-03-01T13:20:00Z");
    const [a, b] = await Promise.all([exports.scheduler.tick(), exports.scheduler.tick()]);
    expect(a + b).toBe(1);
    expect((await exports.store.job(job.id))!.nextFire).toBe(Date.parse("2026-03-01T14:00:00Z"));
    await exports.runner.idle();
    const [e] = (await exports.store.executionsOfJob(job.id)).sort((x, y) => x.seq - y.seq);
    expect(e).toMatchObject({
      windowFrom: Date.parse("2026-03-01T12:00:00Z"),
      windowTo: Date.parse("2026-03-01T13:00:00Z"),
      status: "SUCCEEDED",
    });
    // Cancelling an execution that ended is allowed once, then INVALID_ACTION.
    expect((await exports.service.cancel(parts.as("alice"), e!.id)).status).toBe("CANCELLED");
    expect(await refusal(() => exports.service.cancel(parts.as("alice"), e!.id))).toBe("INVALID_ACTION");
  });
});
