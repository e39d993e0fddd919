import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import mqtt from "mqtt";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestDms } from "../support/dms.js";
import { json } from "../support/http.js";
import {
  createJob,
  describeJob,
  Device,
  execution,
  jobsProvision,
  mqttUrl,
  startJobsDms,
  TestClock,
  until,
} from "./support.js";

const EXTRA = Array.from({ length: 24 }, (_, i) => `d${i + 1}`);
let t: TestDms;
let url: string;
const clock = new TestClock();
const devices: Device[] = [];
const connect = async (thingName: string): Promise<Device> => {
  const d = await Device.connect(url, thingName);
  devices.push(d);
  return d;
};

beforeAll(async () => {
  t = await startJobsDms({ clock, provision: jobsProvision(EXTRA) });
  url = mqttUrl(t);
});
afterAll(async () => {
  await Promise.all(devices.map((d) => d.close()));
  await t.close();
});

describe("device connections", () => {
  it("authenticate with client id and user name = thingName and the thing's secret", async () => {
    const attempt = (options: mqtt.IClientOptions) =>
      mqtt.connectAsync(url, { reconnectPeriod: 0, connectTimeout: 3000, ...options }).then(
        async (c) => {
          await c.endAsync(true);
          return "connected";
        },
        (e: Error) => e.message,
      );
    expect(await attempt({ clientId: "d1", username: "d1", password: "dev-pw-0123456789abcdef" })).toBe("connected");
    expect(await attempt({ clientId: "d1", username: "d1", password: "wrong" })).toMatch(/Bad username or password/i);
    expect(await attempt({ clientId: "ghost", username: "ghost", password: "dev-pw-0123456789abcdef" })).toMatch(
      /Bad username/i,
    );
    expect(await attempt({ clientId: "d2", username: "d1", password: "dev-pw-0123456789abcdef" })).toMatch(
      /Identifier rejected/i,
    );
    expect(await attempt({ clientId: "d1" })).toMatch(/Bad username/i);
  });

  it("refuse a device another thing's topics", async () => {
    const victim = await connect("d2");
    const intruder = await Device.connect(url, "d3", "dev-pw-0123456789abcdef", false);
    devices.push(intruder);
    // mqtt.js turns a SUBACK of 0x80 (failure) into an error.
    await expect(intruder.client.subscribeAsync("things/d2/jobs/#", { qos: 1 })).rejects.toThrow(/Subscribe error/);
    await expect(intruder.client.subscribeAsync("things/+/jobs/#", { qos: 1 })).rejects.toThrow(/Subscribe error/);
    const closed = new Promise<void>((resolve) => intruder.client.once("close", () => resolve()));
    intruder.client.publish("things/d2/jobs/get", JSON.stringify({ clientToken: "evil" }), { qos: 1 });
    await closed;
    await new Promise((r) => setTimeout(r, 200));
    expect(victim.messages.filter((m) => m.topic.endsWith("/get/accepted"))).toEqual([]);
    // Nor may a device forge the service's replies on its own topics.
    const forger = await Device.connect(url, "d4", "dev-pw-0123456789abcdef", false);
    devices.push(forger);
    const forgerClosed = new Promise<void>((resolve) => forger.client.once("close", () => resolve()));
    forger.client.publish("things/d4/jobs/notify-next", "{}", { qos: 1 });
    await forgerClosed;
  });

  it("hand observations on things/{thingName}/observations to the observation hook", async () => {
    const seen: [string, string][] = [];
    t.dms.services.deviceBridge!.onObservations(async (thingName, payload) => {
      seen.push([thingName, payload.toString()]);
    });
    const d = await connect("d5");
    await d.client.publishAsync("things/d5/observations", JSON.stringify({ state: { temp: 21 } }), { qos: 1 });
    await until(() => seen.length > 0);
    expect(seen).toEqual([["d5", '{"state":{"temp":21}}']]);
    const metrics = await (await fetch(`${t.url}/metrics`)).text();
    expect(metrics).toContain('dms_mqtt_device_messages_total{kind="observation"} 1');
    expect(metrics).toMatch(/dms_mqtt_connected_devices [1-9]/);
  });
});

describe("a device taking a job (AWS IoT Jobs topics)", () => {
  it("is notified, starts with start-next, updates with the right and a stale expectedVersion, succeeds", async () => {
    const d = await connect("d6");
    const notified = d.next("notify-next");
    const jobId = await createJob(t, { targets: { things: ["d6"] } });
    const next = await notified;
    expect(next.execution).toMatchObject({
      jobId,
      thingName: "d6",
      status: "QUEUED",
      executionNumber: "1",
      versionNumber: 1,
    });
    expect(next.execution.jobDocument).toEqual({ operation: "reboot" });

    const pending = await d.request("get");
    expect(pending.ok).toBe(true);
    expect(pending.payload.queuedJobs).toEqual([
      { jobId, queuedAt: clock.now, lastUpdatedAt: clock.now, versionNumber: 1, executionNumber: "1" },
    ]);
    expect(pending.payload.inProgressJobs).toEqual([]);

    clock.advance(1000);
    const started = await d.request("start-next", { statusDetails: { step: "download" } });
    expect(started.ok).toBe(true);
    expect(started.payload.execution).toMatchObject({
      jobId,
      status: "IN_PROGRESS",
      versionNumber: 2,
      startedAt: clock.now,
      statusDetails: { step: "download" },
      jobDocument: { operation: "reboot" },
    });

    const progress = await d.request(`${jobId}/update`, {
      status: "IN_PROGRESS",
      expectedVersion: 2,
      statusDetails: { step: "flash" },
      includeJobExecutionState: true,
    });
    expect(progress).toMatchObject({
      ok: true,
      payload: { executionState: { status: "IN_PROGRESS", versionNumber: 3, statusDetails: { step: "flash" } } },
    });

    const stale = await d.request(`${jobId}/update`, { status: "SUCCEEDED", expectedVersion: 2 });
    expect(stale.ok).toBe(false);
    expect(stale.payload).toMatchObject({
      code: "VersionMismatch",
      executionState: { status: "IN_PROGRESS", versionNumber: 3 },
    });

    const done = await d.request(`${jobId}/update`, {
      status: "SUCCEEDED",
      expectedVersion: 3,
      statusDetails: { result: "ok" },
      includeJobDocument: true,
    });
    expect(done).toMatchObject({ ok: true, payload: { jobDocument: { operation: "reboot" } } });

    const e = await execution(t, jobId, "d6");
    expect(e).toMatchObject({
      status: "SUCCEEDED",
      versionNumber: 4,
      statusDetails: { result: "ok" },
      forceCanceled: false,
    });
    const job = await describeJob(t, jobId);
    expect(job.status).toBe("COMPLETED");
    expect(job.jobProcessDetails).toMatchObject({ numberOfSucceededThings: 1, numberOfQueuedThings: 0 });

    const again = await d.request(`${jobId}/update`, { status: "FAILED" });
    expect(again.payload.code).toBe("TerminalStateReached");
    const nothing = await d.request("start-next");
    expect(nothing.payload.execution).toBeUndefined();
  });

  it("answers {jobId}/get and $next/get, and rejects bad requests with AWS's codes", async () => {
    const d = await connect("d7");
    const jobId = await createJob(t, { targets: { things: ["d7"] } });
    const got = await d.request(`${jobId}/get`, { includeJobDocument: false });
    expect(got.payload.execution).toMatchObject({ jobId, status: "QUEUED" });
    expect(got.payload.execution.jobDocument).toBeUndefined();
    expect((await d.request("$next/get")).payload.execution.jobId).toBe(jobId);
    expect((await d.request("nope/get")).payload.code).toBe("ResourceNotFound");
    expect((await d.request("nope/update", { status: "SUCCEEDED" })).payload.code).toBe("ResourceNotFound");
    expect((await d.request(`${jobId}/update`, { status: "CANCELED" })).payload.code).toBe("InvalidRequest");
    expect((await d.request(`${jobId}/update`, {})).payload.code).toBe("InvalidRequest");
    expect((await d.request(`${jobId}/update`, { status: "IN_PROGRESS", statusDetails: { n: 1 } })).payload.code).toBe(
      "InvalidRequest",
    );
    expect((await d.request("start-next", { stepTimeoutInMinutes: 0 })).payload.code).toBe("InvalidRequest");
    const rejected = d.next("get/rejected");
    await d.client.publishAsync("things/d7/jobs/get", "{not json", { qos: 1 });
    expect((await rejected).code).toBe("InvalidJson");
    const invalidTopic = d.next("a/b/c/rejected");
    await d.client.publishAsync("things/d7/jobs/a/b/c", "{}", { qos: 1 });
    expect((await invalidTopic).code).toBe("InvalidTopic");
    // A device may go straight from QUEUED to a final status (REJECTED).
    expect((await d.request(`${jobId}/update`, { status: "REJECTED" })).ok).toBe(true);
    expect((await describeJob(t, jobId)).jobProcessDetails.numberOfRejectedThings).toBe(1);
  });

  it("CANCEL_JOB_EXECUTION refuses an IN_PROGRESS execution without force and cancels it with force", async () => {
    const d = await connect("d8");
    const jobId = await createJob(t, { targets: { things: ["d8"] } });
    await d.request("start-next");
    const plain = await t.call("PATCH", `/thing-jobs/jobs/${jobId}/job-executions/d8`, { user: "alice" });
    expect(plain.status).toBe(409);
    expect((await json(plain)).messageKey).toBe("INVALID_ACTION");
    const cleared = d.next("notify-next");
    const forced = await t.call("PATCH", `/thing-jobs/jobs/${jobId}/job-executions/d8?force=true&expectedVersion=2`, {
      user: "alice",
    });
    expect(forced.status).toBe(200);
    expect((await cleared).execution).toBeUndefined();
    expect(await execution(t, jobId, "d8")).toMatchObject({ status: "CANCELED", forceCanceled: true });
    expect((await d.request(`${jobId}/update`, { status: "SUCCEEDED" })).payload.code).toBe("TerminalStateReached");
  });

  it("a job DELETEd with force is gone for its devices", async () => {
    const d = await connect("d9");
    const jobId = await createJob(t, { targets: { things: ["d9"] } });
    await d.request("start-next");
    expect((await t.call("DELETE", `/thing-jobs/jobs/${jobId}?force=true`, { user: "alice" })).status).toBe(200);
    expect((await d.request(`${jobId}/update`, { status: "SUCCEEDED" })).payload.code).toBe("ResourceNotFound");
  });
});

describe("timers", () => {
  it("times out an execution after inProgressTimeoutInMinutes, with approximateSecondsBeforeTimedOut", async () => {
    const d = await connect("d10");
    const jobId = await createJob(t, {
      targets: { things: ["d10"] },
      timeoutConfig: { inProgressTimeoutInMinutes: 1 },
    });
    const started = await d.request("start-next");
    expect(started.payload.execution.approximateSecondsBeforeTimedOut).toBe(60);
    clock.advance(20_000);
    expect((await execution(t, jobId, "d10")).approximateSecondsBeforeTimedOut).toBe(40);
    const notified = d.next("notify-next");
    clock.advance(41_000);
    await until(async () => (await execution(t, jobId, "d10")).status === "TIMED_OUT");
    expect((await notified).execution).toBeUndefined();
    const job = await describeJob(t, jobId);
    expect(job).toMatchObject({ status: "COMPLETED", jobProcessDetails: { numberOfTimedOutThings: 1 } });
  });

  it("times out on the device's stepTimeoutInMinutes, renewed with each update", async () => {
    const d = await connect("d11");
    const jobId = await createJob(t, {
      targets: { things: ["d11"] },
      timeoutConfig: { inProgressTimeoutInMinutes: 30 },
    });
    await d.request("start-next", { stepTimeoutInMinutes: 2 });
    expect((await execution(t, jobId, "d11")).approximateSecondsBeforeTimedOut).toBe(120);
    clock.advance(100_000);
    await d.request(`${jobId}/update`, { status: "IN_PROGRESS", stepTimeoutInMinutes: 2 });
    clock.advance(100_000);
    await new Promise((r) => setTimeout(r, 150));
    expect((await execution(t, jobId, "d11")).status).toBe("IN_PROGRESS");
    clock.advance(21_000);
    await until(async () => (await execution(t, jobId, "d11")).status === "TIMED_OUT");
  });

  it("rolls out at maximumPerMinute: executions stay QUEUED, unseen by devices, until their turn", async () => {
    const things = ["d12", "d13", "d14", "d15", "d16"];
    const last = await connect("d16");
    const jobId = await createJob(t, { targets: { things }, maximumPerMinute: 2 });
    const { jobs } = t.dms.services;
    const released = async () => {
      const pending = await Promise.all(things.map((n) => jobs!.pending(n)));
      return pending.filter((executions) => executions.some((e) => e.jobId === jobId)).length;
    };
    expect(await released()).toBe(2);
    expect((await last.request("get")).payload.queuedJobs).toEqual([]);
    expect((await describeJob(t, jobId)).jobProcessDetails.numberOfQueuedThings).toBe(5);
    clock.advance(30_000);
    await new Promise((r) => setTimeout(r, 150));
    expect(await released()).toBe(2);
    clock.advance(30_000);
    await until(async () => (await released()) === 4);
    const notified = last.next("notify-next");
    clock.advance(60_000);
    await until(async () => (await released()) === 5);
    expect((await notified).execution.jobId).toBe(jobId);
  });

  it("aborts the job when the abortConfig's failure share is crossed", async () => {
    const things = ["d17", "d18", "d19", "d20"];
    const jobId = await createJob(t, {
      targets: { things },
      abortConfig: {
        criteriaList: [
          { failureType: "FAILED", action: "CANCEL", thresholdPercentage: 50, minNumberOfExecutedThings: 2 },
        ],
      },
    });
    const a = await connect("d17");
    const b = await connect("d18");
    expect((await a.request(`${jobId}/update`, { status: "FAILED" })).ok).toBe(true);
    expect((await describeJob(t, jobId)).status).toBe("IN_PROGRESS");
    await b.request(`${jobId}/update`, { status: "FAILED" });
    const job = await describeJob(t, jobId);
    expect(job.status).toBe("CANCELED");
    expect(job.comment).toMatch(/FAILED/);
    expect(job.jobProcessDetails).toMatchObject({ numberOfFailedThings: 2, numberOfCanceledThings: 2 });
  });
});

describe("timers survive a restart", () => {
  it("resumes rollout and timeouts from SQLite", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "dms-jobs-restart-"));
    const c = new TestClock();
    try {
      let s = await startJobsDms({ clock: c, dataDir, users: ["alice"] });
      const jobId = await createJob(s, {
        targets: { things: ["t3", "t4"] },
        maximumPerMinute: 1,
        timeoutConfig: { inProgressTimeoutInMinutes: 1 },
      });
      const first = (await s.dms.services.jobs!.pending("t3")).length ? "t3" : "t4";
      const second = first === "t3" ? "t4" : "t3";
      const d = await Device.connect(mqttUrl(s), first);
      expect((await d.request("start-next")).payload.execution.status).toBe("IN_PROGRESS");
      await d.close();
      await s.close();

      c.advance(61_000);
      s = await startJobsDms({ clock: c, dataDir, users: ["alice"] });
      // Through the service, not HTTP: a token issued at the moved clock is not yet valid in real time.
      await until(async () => (await s.dms.services.jobs!.execution(jobId, first)).status === "TIMED_OUT");
      expect(await s.dms.services.jobs!.pending(second)).toHaveLength(1);
      await s.close();
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 90_000);
});
