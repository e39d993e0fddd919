import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseCron } from "../../src/observations/index.js";
import { startTestDms } from "../support/dms.js";
import { json } from "../support/http.js";

/**
 * Scheduled exports. Cron cases follow the AWS EventBridge schedule expression
 * reference (docs.aws.amazon.com/eventbridge/latest/userguide/eb-scheduled-rule-pattern.html):
 * six fields, day-of-week 1-7 = SUN-SAT, `?`, `L`, `W`, `#`, UTC.
 */

const at = (iso: string) => Date.parse(iso);
const next = (expr: string, after: string) => new Date(parseCron(expr).next(at(after))!).toISOString();

describe("cron(...) in the cloud provider's format", () => {
  it("fixed minute and hour, every day", () => {
    expect(next("cron(0 10 * * ? *)", "2026-01-01T10:00:00Z")).toBe("2026-01-02T10:00:00.000Z");
    expect(next("cron(0 10 * * ? *)", "2026-01-01T09:59:30Z")).toBe("2026-01-01T10:00:00.000Z");
  });
  it("every 15 minutes 09-17 Monday to Friday (AWS example 0/15 ... MON-FRI)", () => {
    expect(next("cron(0/15 9-17 ? * MON-FRI *)", "2026-11-20T17:45:00Z")).toBe("2026-11-23T09:00:00.000Z"); // Fri -> Mon
    expect(next("cron(0/15 9-17 ? * 2-6 *)", "2026-11-23T09:05:00Z")).toBe("2026-11-23T09:15:00.000Z");
  });
  it("L in day-of-month is the last day; LW the last weekday", () => {
    expect(next("cron(0 8 L * ? *)", "2026-02-01T00:00:00Z")).toBe("2026-02-28T08:00:00.000Z");
    expect(next("cron(0 8 LW * ? *)", "2026-05-01T00:00:00Z")).toBe("2026-05-29T08:00:00.000Z"); // 31 May 2026 is a Sunday
  });
  it("W is the weekday nearest the day, within the month", () => {
    expect(next("cron(0 8 15W * ? *)", "2026-11-01T00:00:00Z")).toBe("2026-11-16T08:00:00.000Z"); // 15th is a Sunday
    expect(next("cron(0 8 1W * ? *)", "2026-08-01T00:00:00Z")).toBe("2026-08-03T08:00:00.000Z"); // 1st is a Saturday
  });
  it("# is the n-th weekday of the month; <d>L the last one", () => {
    expect(next("cron(0 12 ? * 2#1 *)", "2026-01-31T00:00:00Z")).toBe("2026-02-02T12:00:00.000Z"); // first Monday
    expect(next("cron(0 12 ? * 3#2 *)", "2026-03-01T00:00:00Z")).toBe("2026-03-10T12:00:00.000Z"); // second Tuesday
    expect(next("cron(0 12 ? * 6L *)", "2026-01-01T00:00:00Z")).toBe("2026-01-30T12:00:00.000Z"); // last Friday
  });
  it("month names and the year field", () => {
    expect(next("cron(0 0 1 JAN ? 2030)", "2026-05-05T00:00:00Z")).toBe("2030-01-01T00:00:00.000Z");
    expect(parseCron("cron(0 0 1 1 ? 2020)").next(at("2026-01-01T00:00:00Z"))).toBeUndefined();
  });
  it.each([
    ["cron(* 1 * * ? *)", "minutes"],
    ["cron(0 * * * ? *)", "hours"],
    ["cron(0 1 * * * *)", "exactly one"],
    ["cron(0 1 * * ?)", "six fields"],
    ["cron(60 1 * * ? *)", "minutes"],
    ["cron(0 1 ? * 8 *)", "day-of-week"],
    ["rate(5 minutes)", "cron("],
  ])("refuses %s", (expr, why) => {
    expect(() => parseCron(expr)).toThrow(why);
  });
});

async function until<T>(what: () => Promise<T>, ok: (v: T) => boolean, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await what();
    if (ok(v)) return v;
    if (Date.now() > end) throw new Error(`timed out waiting; last: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function seed(now: number) {
  return Array.from({ length: 120 }, (_, i) => ({
    document: { thingName: "t1", thingType: "10", domain: "acme", timestamp: now - i * 60_000, state: { temp: i } },
  }));
}

describe("scheduled export jobs", () => {
  it("run on their schedule for the window timePeriod back from the fire time (clock scaled 60x)", async () => {
    const base = Date.now();
    const clock = () => base + (Date.now() - base) * 60;
    const t = await startTestDms({ env: { DMS_ROLES: "api,scheduler" }, start: { clock } });
    try {
      // Tokens are checked against real time too, so the moved clock is driven through the service layer.
      const { exports, identity } = t.dms.services;
      const alice = identity.principal("alice")!;
      await t.dms.services.observations.insertBatch(seed(base));
      const job = await exports.service.create(alice, {
        jobName: "minutely",
        type: "scheduled",
        thingType: "10",
        schedule: "cron(0/1 0/1 * * ? *)",
        timePeriod: "1h",
        resources: ["temp"],
      });
      const list = await until(
        async () => exports.service.executions(alice, job.id, { size: 10, order: "asc" }),
        (l) => l.exportJobExecutions.some((e) => e.status === "SUCCEEDED"),
      );
      const e = await exports.service.execution(alice, list.exportJobExecutions[0]!.id);
      const m = /^minutely-(\d{8}T\d{6}Z)-(\d{8}T\d{6}Z)\.csv$/.exec(e.executionFileName)!;
      const parse = (s: string) =>
        Date.parse(s.replace(/(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)Z/, "$1-$2-$3T$4:$5:$6Z"));
      const [from, to] = [parse(m[1]!), parse(m[2]!)];
      expect(to - from).toBe(3_600_000);
      expect(to % 60_000).toBe(0);
      expect(to).toBeGreaterThan(base);
      // Disabling stops the fires.
      await exports.service.update(alice, job.id, { enabled: false });
      expect((await exports.store.job(job.id))!.nextFire).toBeNull();
    } finally {
      await t.close();
    }
  });

  it("survive a restart: queued executions resume and missed fires run once on start", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "dms-export-restart-"));
    try {
      const first = await startTestDms({ dataDir, env: { DMS_ROLES: "api,scheduler" } });
      const now = Date.now();
      await first.dms.services.observations.insertBatch(seed(now));
      const job = await json(
        await first.call("POST", "/observations/export/jobs", {
          user: "alice",
          body: {
            jobName: "five",
            type: "scheduled",
            thingType: "10",
            schedule: "cron(0/5 0/1 * * ? *)",
            timePeriod: "2h",
            resources: ["temp"],
          },
        }),
      );
      // An execution left queued, as a crash would leave it.
      const { exports } = first.dms.services;
      const stored = (await exports.store.job(job.id))!;
      await exports.store.insertExecution(
        {
          id: "0b9f3c1e-5a47-4a8e-9d65-7f1f2f8e9a10",
          jobId: job.id,
          owner: "alice",
          status: "QUEUED",
          submissionDateTime: new Date(now).toISOString(),
          completionDateTime: "",
          dataScannedInBytes: 0,
          engineExecutionTimeInMillis: 0,
          executionFileName: "five-left.csv",
          windowFrom: now - 3_600_000,
          windowTo: now,
        },
        { holder: "a-crashed-process", until: now },
      );
      expect(stored.nextFire).toBeGreaterThan(now);
      await first.close();

      // 30 minutes later: six fires were missed.
      const later = await startTestDms({
        dataDir,
        env: { DMS_ROLES: "api,scheduler" },
        start: { clock: () => Date.now() + 30 * 60_000 },
      });
      try {
        const alice = later.dms.services.identity.principal("alice")!;
        const list = await until(
          async () => later.dms.services.exports.service.executions(alice, job.id, { size: 10, order: "asc" }),
          (l) => l.exportJobExecutions.length === 2 && l.exportJobExecutions.every((e) => e.status === "SUCCEEDED"),
        );
        expect(list.exportJobExecutions[0]!.id).toBe("0b9f3c1e-5a47-4a8e-9d65-7f1f2f8e9a10");
        expect(list.exportJobExecutions[1]!.dataScannedInBytes).toBeGreaterThan(0);
        expect((await later.dms.services.exports.store.job(job.id))!.nextFire).toBeGreaterThan(
          Date.now() + 30 * 60_000 - 1000,
        );
      } finally {
        await later.close();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
