import { gunzipSync } from "node:zlib";
import { SMTPServer } from "smtp-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BASE_PROVISION, startTestDms, type TestDms } from "../support/dms.js";
import { json, type Payload } from "../support/http.js";

/** Export jobs and executions through REST: the interface's CREATE rules, states, privileges and the CSV. */

const DAY0 = Date.parse("2026-01-01T00:00:00Z");
const PROVISION = {
  ...BASE_PROVISION,
  users: [
    ...BASE_PROVISION.users!,
    {
      userName: "noexport",
      password: "noexport-pw",
      role: "ReadWrite" as const,
      homeDomain: "acme",
      privileges: { acme: ["Things.READ", "ThingTypes.READ"] },
    },
  ],
};

function observations(n: number, start = DAY0, stepMs = 60_000) {
  return Array.from({ length: n }, (_, i) => ({
    document: {
      thingName: i % 2 === 0 ? "t1" : "t2",
      thingType: "10",
      domain: "acme",
      timestamp: start + i * stepMs,
      state: { temp: i, note: i === 3 ? 'say "hi", ok' : undefined, latlng: "59.91,10.75" },
    },
  }));
}

async function until<T>(what: () => Promise<T>, ok: (v: T) => boolean, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await what();
    if (ok(v)) return v;
    if (Date.now() > end) throw new Error(`timed out waiting; last: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const instant = {
  jobName: "temps",
  type: "instant",
  thingType: "10",
  from: "2026-01-01T00:00:00Z",
  to: "2026-01-01T00:10:00Z",
  resources: ["temp", "note"],
};

describe("export jobs", () => {
  let t: TestDms;
  let mails: { to: string; body: string }[];
  let smtp: SMTPServer;

  beforeAll(async () => {
    mails = [];
    smtp = new SMTPServer({
      authOptional: true,
      disabledCommands: ["STARTTLS"],
      onData(stream, session, cb) {
        let body = "";
        stream.on("data", (c: Buffer) => (body += c.toString()));
        stream.on("end", () => {
          mails.push({ to: session.envelope.rcptTo.map((r) => r.address).join(","), body });
          cb();
        });
      },
    });
    await new Promise<void>((r) => smtp.listen(0, "127.0.0.1", () => r()));
    const port = (smtp.server.address() as { port: number }).port;
    t = await startTestDms({ provision: PROVISION, env: { SMTP_URL: `smtp://127.0.0.1:${port}` } });
    await t.dms.services.observations.insertBatch(observations(20));
  });
  afterAll(async () => {
    await t.close();
    await new Promise<void>((r) => smtp.close(() => r()));
  });

  const call = (method: string, path: string, body?: unknown, user = "alice") => t.call(method, path, { user, body });
  const create = async (body: unknown, user = "alice"): Promise<Payload> => {
    const res = await call("POST", "/observations/export/jobs", body, user);
    expect(res.status, JSON.stringify(await res.clone().json())).toBe(200);
    return json(res);
  };
  const finished = (id: string) =>
    until(
      async () => json(await call("GET", `/observations/export/executions/${id}`)),
      (e) => e.status !== "QUEUED" && e.status !== "RUNNING",
    );

  it("an instant export runs at once; its CSV, gunzipped, matches the data row for row; notifyByEmail sends the e-mail", async () => {
    const job = await create({ ...instant, notifyByEmail: true, recipients: "ops@example.com, boss@example.com" });
    expect(job).toMatchObject({
      ...instant,
      from: "2026-01-01T00:00:00.000Z",
      to: "2026-01-01T00:10:00.000Z",
      thingTypeLabel: "Tracker",
    });
    expect(job.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(job.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

    const list = await json(await call("GET", `/observations/export/jobs/${job.id}/executions`));
    expect(list.exportJobExecutions).toHaveLength(1);
    const e = await finished(list.exportJobExecutions[0].id);
    expect(e).toMatchObject({
      status: "SUCCEEDED",
      jobId: job.id,
      executionFileName: "temps-20260101T000000Z-20260101T001000Z.csv",
    });
    expect(e.dataScannedInBytes).toBeGreaterThan(10 * 80);
    expect(e.engineExecutionTimeInMillis).toBeGreaterThanOrEqual(0);
    expect(e.completionDateTime).not.toBe("");

    const dl = await json(await call("GET", `/observations/export/executions/${e.id}/download`));
    expect(dl.id).toBe(e.id);
    const url = new URL(dl.StorageSignedURL);
    const file = await fetch(`${t.url}${url.pathname}${url.search}`);
    expect(file.status).toBe(200);
    const csv = gunzipSync(Buffer.from(await file.arrayBuffer())).toString();
    const expected = ["timestamp,thingName,temp,note"];
    for (let i = 0; i < 10; i++) {
      expected.push(
        `${new Date(DAY0 + i * 60_000).toISOString()},${i % 2 === 0 ? "t1" : "t2"},${i},${i === 3 ? '"say ""hi"", ok"' : ""}`,
      );
    }
    expect(csv).toBe(`${expected.join("\n")}\n`);

    // A tampered signature or another path is refused.
    const bad = await fetch(`${t.url}${url.pathname}${url.search.replace(/(X-Dms-Signature=)/, "$1AA")}`);
    expect(bad.status).toBe(403);

    await until(
      async () => mails.length,
      (n) => n >= 1,
    );
    expect(mails[0]!.to).toBe("ops@example.com,boss@example.com");
    expect(mails[0]!.body).toContain("SUCCEEDED");
  });

  it("things instead of thingType, and GET answers the whole job", async () => {
    const job = await create({
      jobName: "t1 only",
      type: "instant",
      things: ["t1"],
      from: instant.from,
      to: instant.to,
      resources: ["temp"],
    });
    const got = await json(await call("GET", `/observations/export/jobs/${job.id}`));
    expect(got).toEqual(job);
    const list = await json(await call("GET", `/observations/export/jobs/${job.id}/executions`));
    const e = await finished(list.exportJobExecutions[0].id);
    expect(e.status).toBe("SUCCEEDED");
  });

  const bad: [string, Record<string, unknown>, string, string][] = [
    ["jobName missing", { ...instant, jobName: undefined }, "INVALID_ARGUMENTS", "jobName"],
    ["type not scheduled/instant", { ...instant, type: "daily" }, "INVALID_ARGUMENTS", "type"],
    ["thingType and things", { ...instant, things: ["t1"] }, "INVALID_ARGUMENTS", "things"],
    ["neither thingType nor things", { ...instant, thingType: undefined }, "INVALID_ARGUMENTS", "thingType"],
    ["instant without from", { ...instant, from: undefined }, "INVALID_ARGUMENTS", "from"],
    ["from not UTC", { ...instant, from: "2026-01-01T00:00:00+02:00" }, "INVALID_ARGUMENTS", "from"],
    ["to before from", { ...instant, to: "2025-12-31T00:00:00Z" }, "INVALID_ARGUMENTS", "to"],
    ["no resources", { ...instant, resources: [] }, "INVALID_ARGUMENTS", "resources"],
    [
      "bad recipients",
      { ...instant, notifyByEmail: true, recipients: "not-an-address" },
      "INVALID_ARGUMENTS",
      "recipients",
    ],
    [
      "scheduled without schedule",
      { ...instant, type: "scheduled", from: undefined, to: undefined, timePeriod: "1d" },
      "INVALID_ARGUMENTS",
      "schedule",
    ],
    [
      "schedule not cron()",
      { ...instant, type: "scheduled", from: undefined, to: undefined, schedule: "0 1 * * *", timePeriod: "1d" },
      "INVALID_ARGUMENTS",
      "schedule",
    ],
    [
      "minute wildcard",
      {
        ...instant,
        type: "scheduled",
        from: undefined,
        to: undefined,
        schedule: "cron(* 1 * * ? *)",
        timePeriod: "1d",
      },
      "INVALID_ARGUMENTS",
      "schedule",
    ],
    [
      "hour wildcard",
      {
        ...instant,
        type: "scheduled",
        from: undefined,
        to: undefined,
        schedule: "cron(0 */2 * * ? *)",
        timePeriod: "1d",
      },
      "INVALID_ARGUMENTS",
      "schedule",
    ],
    [
      "both day fields set",
      {
        ...instant,
        type: "scheduled",
        from: undefined,
        to: undefined,
        schedule: "cron(0 1 * * MON *)",
        timePeriod: "1d",
      },
      "INVALID_ARGUMENTS",
      "schedule",
    ],
    [
      "bad timePeriod",
      {
        ...instant,
        type: "scheduled",
        from: undefined,
        to: undefined,
        schedule: "cron(0 1 * * ? *)",
        timePeriod: "1w",
      },
      "INVALID_ARGUMENTS",
      "timePeriod",
    ],
    ["unknown thing type", { ...instant, thingType: "99" }, "THING_TYPE_NOT_FOUND", "thingType"],
    ["unknown thing", { ...instant, thingType: undefined, things: ["t1", "nope"] }, "THING_NOT_FOUND", "things"],
  ];
  it.each(bad)("CREATE refuses %s", async (_name, body, key, property) => {
    const res = await call("POST", "/observations/export/jobs", body);
    expect(await json(res)).toMatchObject({ messageKey: key, property });
  });

  it("CREATE needs ReadWrite and DataExport.CREATE; thing types and things must be accessible", async () => {
    expect(await json(await call("POST", "/observations/export/jobs", instant, "reader"))).toMatchObject({
      messageKey: "NOT_AUTHORIZED",
    });
    expect(await json(await call("POST", "/observations/export/jobs", instant, "noexport"))).toMatchObject({
      messageKey: "NOT_AUTHORIZED",
    });
    // eastie may read nothing in acme: thing type 10 and thing t1 are not accessible to it.
    expect(await json(await call("POST", "/observations/export/jobs", instant, "eastie"))).toMatchObject({
      messageKey: "THING_TYPE_NOT_FOUND",
    });
    expect(await json(await call("GET", "/observations/export/jobs", undefined, "noexport"))).toMatchObject({
      messageKey: "NOT_AUTHORIZED",
    });
  });

  it("jobs and executions are visible only to their owner", async () => {
    const job = await create({ ...instant, jobName: "mine" });
    expect(await json(await call("GET", `/observations/export/jobs/${job.id}`, undefined, "admin"))).toMatchObject({
      messageKey: "EXPORT_JOB_NOT_FOUND",
    });
    const execs = await json(await call("GET", `/observations/export/jobs/${job.id}/executions`));
    const eid = execs.exportJobExecutions[0].id;
    expect(await json(await call("GET", `/observations/export/executions/${eid}`, undefined, "admin"))).toMatchObject({
      messageKey: "EXPORT_EXECUTION_NOT_FOUND",
    });
    const adminList = await json(await call("GET", "/observations/export/executions", undefined, "admin"));
    expect(adminList.exportJobExecutions).toEqual([]);
    expect(await json(await call("GET", "/observations/export/jobs/not-a-uuid"))).toMatchObject({
      messageKey: "INVALID_ARGUMENTS",
      property: "id",
    });
  });

  it("LIST pages by creation with size, marker, pageInfo and sortInfo", async () => {
    const names: string[] = [];
    for (let i = 0; i < 3; i++) names.push((await create({ ...instant, jobName: `page-${i}` }, "admin")).jobName);
    const first = await json(await call("GET", "/observations/export/jobs?size=2&order=asc", undefined, "admin"));
    expect(first.exportJobs.map((j: { jobName: string }) => j.jobName)).toEqual(["page-0", "page-1"]);
    expect(first.exportJobs[0]).toEqual({
      id: expect.any(String),
      jobName: "page-0",
      thingType: "10",
      from: "2026-01-01T00:00:00.000Z",
      to: "2026-01-01T00:10:00.000Z",
      resources: ["temp", "note"],
      type: "instant",
    });
    expect(first.pageInfo).toEqual({ itemCount: 2, size: 2, hasNext: true, nextMarker: expect.any(String) });
    expect(first.sortInfo).toEqual({ order: "asc" });
    const second = await json(
      await call(
        "GET",
        `/observations/export/jobs?size=2&order=asc&marker=${first.pageInfo.nextMarker}`,
        undefined,
        "admin",
      ),
    );
    expect(second.exportJobs.map((j: { jobName: string }) => j.jobName)).toEqual(["page-2"]);
    expect(second.pageInfo).toEqual({ itemCount: 1, size: 2, marker: first.pageInfo.nextMarker, hasNext: false });
    const desc = await json(await call("GET", "/observations/export/jobs", undefined, "admin"));
    expect(desc.sortInfo).toEqual({ order: "desc" });
    expect(desc.exportJobs[0].jobName).toBe("page-2");
    expect(await json(await call("GET", "/observations/export/jobs?size=101", undefined, "admin"))).toMatchObject({
      messageKey: "INVALID_ARGUMENTS",
      property: "size",
    });
    const all = await json(await call("GET", "/observations/export/executions?size=100", undefined, "admin"));
    expect(all.exportJobExecutions[0]).toHaveProperty("executionFileName");
  });

  it("UPDATE changes only supplied fields of a scheduled job; not of an instant one", async () => {
    const job = await create({
      jobName: "nightly",
      type: "scheduled",
      thingType: "10",
      schedule: "cron(0 2 ? * MON-FRI *)",
      timePeriod: "1d",
      resources: ["temp"],
    });
    expect(job.enabled).toBe(true);
    const res = await call("PATCH", `/observations/export/jobs/${job.id}`, {
      enabled: false,
      schedule: "cron(30 3 L * ? *)",
    });
    const updated = await json(res);
    expect(updated).toMatchObject({
      ...job,
      enabled: false,
      schedule: "cron(30 3 L * ? *)",
      updatedAt: expect.any(String),
    });
    expect(
      await json(await call("PATCH", `/observations/export/jobs/${job.id}`, { schedule: "cron(0 * * * ? *)" })),
    ).toMatchObject({
      messageKey: "INVALID_ARGUMENTS",
      property: "schedule",
    });
    const inst = await create({ ...instant, jobName: "fixed" });
    expect(await json(await call("PATCH", `/observations/export/jobs/${inst.id}`, { jobName: "x" }))).toMatchObject({
      messageKey: "INVALID_ARGUMENTS",
    });
    expect(
      await json(await call("PATCH", `/observations/export/jobs/${job.id}`, { jobName: "x" }, "reader")),
    ).toMatchObject({ messageKey: "NOT_AUTHORIZED" });
  });

  it("DELETE removes the job with its executions and files", async () => {
    const job = await create({ ...instant, jobName: "gone" });
    const execs = await json(await call("GET", `/observations/export/jobs/${job.id}/executions`));
    const e = await finished(execs.exportJobExecutions[0].id);
    expect(await t.dms.services.exports.files.size(e.id)).toBeGreaterThan(0);
    expect((await call("DELETE", `/observations/export/jobs/${job.id}`)).status).toBe(200);
    expect(await json(await call("GET", `/observations/export/jobs/${job.id}`))).toMatchObject({
      messageKey: "EXPORT_JOB_NOT_FOUND",
    });
    expect(await json(await call("GET", `/observations/export/executions/${e.id}`))).toMatchObject({
      messageKey: "EXPORT_EXECUTION_NOT_FOUND",
    });
    expect(await t.dms.services.exports.files.size(e.id)).toBeUndefined();
  });

  it("CANCEL interrupts a running large export; cancelling again is INVALID_ACTION", async () => {
    const big = 200_000;
    const start = Date.parse("2026-02-01T00:00:00Z");
    for (let i = 0; i < big; i += 50_000)
      await t.dms.services.observations.insertBatch(observations(50_000, start + i * 10, 10));
    // The synchronous inserts block the loop; let idle keep-alive sockets the server closed meanwhile go first.
    await new Promise((r) => setTimeout(r, 100));
    const job = await create({
      ...instant,
      jobName: "big",
      from: "2026-02-01T00:00:00Z",
      to: "2026-02-02T00:00:00Z",
      resources: ["temp", "latlng"],
    });
    const execs = await json(await call("GET", `/observations/export/jobs/${job.id}/executions`));
    const id = execs.exportJobExecutions[0].id;
    await until(
      async () => (await json(await call("GET", `/observations/export/executions/${id}`))).status,
      (s) => s === "RUNNING",
      20_000,
    );
    // A long export reports how far it got: the rows written so far, in /metrics.
    const runningRows = async (): Promise<number> =>
      Number(/^dms_export_running_rows (\d+)$/m.exec(await (await fetch(`${t.url}/metrics`)).text())?.[1]);
    await until(runningRows, (n) => n > 0 && n < big, 20_000);
    const res = await call("POST", `/observations/export/executions/${id}`);
    const cancelled = await json(res);
    expect(cancelled).toMatchObject({ id, jobId: job.id, status: "CANCELLED" });
    expect(cancelled.completionDateTime).not.toBe("");
    await t.dms.services.exports.runner.idle();
    expect(await runningRows()).toBe(0);
    const after = await json(await call("GET", `/observations/export/executions/${id}`));
    expect(after.status).toBe("CANCELLED");
    expect(await t.dms.services.exports.files.size(id)).toBeUndefined();
    expect(await json(await call("POST", `/observations/export/executions/${id}`))).toMatchObject({
      messageKey: "INVALID_ACTION",
    });
    expect(await json(await call("GET", `/observations/export/executions/${id}/download`))).toMatchObject({
      messageKey: "EXPORT_EXECUTION_NOT_FOUND",
    });
  }, 120_000);
});
