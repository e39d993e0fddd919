import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestDms } from "../support/dms.js";
import { json } from "../support/http.js";
import { createJob, describeJob, local, startJobsDms, TestClock, uploadDocument } from "./support.js";

let t: TestDms;
const clock = new TestClock();
beforeAll(async () => {
  t = await startJobsDms({ clock });
});
afterAll(() => t.close());

const err = async (res: Response) => ({ status: res.status, ...(await json(res)) });

describe("GENERATE_UPLOAD_URL and the signed PUT", () => {
  it("creates a job through the whole flow: ticket, PUT, CREATE, DESCRIBE, GET_JOB_DOCUMENT", async () => {
    const res = await t.call("POST", "/thing-jobs/documents", {
      user: "alice",
      body: { documentName: "firmware-2.1", domain: "acme" },
    });
    expect(res.status).toBe(200);
    const ticket = await json(res);
    expect(ticket.documentName).toBe("firmware-2.1");
    expect(ticket.signedUrl).toMatch(
      /\/storage\/job-documents\/[0-9a-f-]+\?X-Dms-Expires=\d+&X-Dms-Signature=[0-9A-Za-z_-]+$/,
    );
    const put = await fetch(local(t, ticket.signedUrl), {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ operation: "update", url: "https://example.com/fw.bin" }),
    });
    expect(put.status).toBe(200);

    const created = await t.call("POST", "/thing-jobs/jobs", {
      user: "alice",
      body: {
        domain: "acme",
        description: "update firmware",
        jobDocumentId: ticket.documentId,
        targets: { things: ["t2"], groups: ["g1"] },
        targetSelection: "SNAPSHOT",
        maximumPerMinute: 100,
      },
    });
    expect(created.status).toBe(200);
    const { jobId, ...rest } = await json(created);
    expect(rest).toEqual({ domain: "acme", description: "update firmware" });

    const job = await describeJob(t, jobId);
    expect(job).toMatchObject({
      jobId,
      domain: "acme",
      description: "update firmware",
      status: "IN_PROGRESS",
      targetSelection: "SNAPSHOT",
      createdAt: new Date(clock.now).toISOString(),
      lastUpdatedAt: new Date(clock.now).toISOString(),
      targets: { groups: ["fleet"], things: ["t2"] },
      maximumPerMinute: 100,
      jobProcessDetails: {
        numberOfQueuedThings: 2,
        numberOfInProgressThings: 0,
        numberOfSucceededThings: 0,
        processingTargets: { groups: ["fleet"], things: ["t2"] },
      },
    });
    expect(job.completedAt).toBeUndefined();

    const doc = await t.call("GET", `/thing-jobs/documents/${jobId}`, { user: "reader" });
    expect(await json(doc)).toEqual({ document: { operation: "update", url: "https://example.com/fw.bin" } });
  });

  it("accepts one PUT only, and refuses tampered and expired URLs with 403", async () => {
    const ticket = await json(
      await t.call("POST", "/thing-jobs/documents", { user: "alice", body: { documentName: "d", domain: "acme" } }),
    );
    const url = local(t, ticket.signedUrl);
    const put = (u: string, body = "{}", headers: Record<string, string> = { "content-type": "application/json" }) =>
      fetch(u, { method: "PUT", headers, body });
    expect(
      (await put(url.replace(/Signature=(.)/, (_, c: string) => `Signature=${c === "0" ? "1" : "0"}`))).status,
    ).toBe(403);
    expect((await put(url.replace(/Expires=\d+/, (m) => `${m}1`))).status).toBe(403);
    expect((await put(url)).status).toBe(200);
    expect((await put(url)).status).toBe(403);

    const late = await json(
      await t.call("POST", "/thing-jobs/documents", { user: "alice", body: { documentName: "d", domain: "acme" } }),
    );
    clock.advance(15 * 60_000 + 1000);
    expect((await put(local(t, late.signedUrl))).status).toBe(403);
  });

  it("needs Content-Type and Content-Length, JSON, and at most 32 KiB", async () => {
    const ticket = async () =>
      local(
        t,
        (
          await json(
            await t.call("POST", "/thing-jobs/documents", {
              user: "alice",
              body: { documentName: "d", domain: "acme" },
            }),
          )
        ).signedUrl,
      );
    const noType = await fetch(await ticket(), { method: "PUT", body: new Uint8Array(Buffer.from("{}")) });
    expect(noType.status).toBe(400);
    const notJson = await fetch(await ticket(), {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: "{no",
    });
    expect(await err(notJson)).toMatchObject({ status: 400, messageKey: "INVALID_ARGUMENTS" });
    const big = JSON.stringify({ blob: "x".repeat(32 * 1024) });
    const tooBig = await fetch(await ticket(), {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: big,
    });
    expect(tooBig.status).toBe(413);
    const chunked = new URL(await ticket());
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(
        {
          method: "PUT",
          host: chunked.hostname,
          port: chunked.port,
          path: chunked.pathname + chunked.search,
          headers: { "content-type": "application/json", "transfer-encoding": "chunked" },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on("error", reject);
      req.end("{}");
    });
    expect(status).toBe(411);
  });

  it("answers the interface's errors for a bad name, an unknown domain and missing privileges", async () => {
    const post = (user: string, body: unknown) => t.call("POST", "/thing-jobs/documents", { user, body });
    expect(await err(await post("alice", { documentName: "x".repeat(65), domain: "acme" }))).toMatchObject({
      status: 400,
      messageKey: "INVALID_ARGUMENTS",
      property: "documentName",
    });
    expect((await post("alice", { documentName: "x".repeat(64), domain: "acme" })).status).toBe(200);
    expect(await err(await post("alice", { domain: "acme" }))).toMatchObject({
      messageKey: "PROPERTY_REQUIRED",
      property: "documentName",
    });
    expect(await err(await post("alice", { documentName: "d" }))).toMatchObject({
      messageKey: "PROPERTY_REQUIRED",
      property: "domain",
    });
    expect(await err(await post("alice", { documentName: "d", domain: "nowhere" }))).toMatchObject({
      status: 403,
      messageKey: "NOT_AUTHORIZED_DOMAIN",
      property: "domain",
    });
    expect(await err(await post("reader", { documentName: "d", domain: "acme" }))).toMatchObject({
      status: 403,
      messageKey: "NOT_AUTHORIZED",
    });
    expect((await err(await post("eastie", { documentName: "d", domain: "acme" }))).messageKey).toBe("NOT_AUTHORIZED");
    expect((await err(await post("jobReader", { documentName: "d", domain: "acme" }))).messageKey).toBe(
      "NOT_AUTHORIZED",
    );
  });
});

describe("CREATE", () => {
  let doc: string;
  beforeAll(async () => {
    doc = await uploadDocument(t);
  });
  const create = (body: Record<string, unknown>, user = "alice") =>
    t.call("POST", "/thing-jobs/jobs", {
      user,
      body: {
        domain: "acme",
        description: "d",
        jobDocumentId: doc,
        targetSelection: "SNAPSHOT",
        targets: { things: ["t1"] },
        ...body,
      },
    });

  it("answers PROPERTY_REQUIRED and INVALID_ARGUMENTS naming the property", async () => {
    const cases: [Record<string, unknown>, string, string][] = [
      [{ description: undefined }, "PROPERTY_REQUIRED", "description"],
      [{ jobDocumentId: undefined }, "PROPERTY_REQUIRED", "jobDocumentId"],
      [{ targets: undefined }, "PROPERTY_REQUIRED", "targets"],
      [{ targets: {} }, "PROPERTY_REQUIRED", "targets"],
      [{ targets: { things: [], groups: [] } }, "PROPERTY_REQUIRED", "targets"],
      [{ targetSelection: undefined }, "PROPERTY_REQUIRED", "targetSelection"],
      [{ targetSelection: "SOMETIMES" }, "INVALID_ARGUMENTS", "targetSelection"],
      [{ maximumPerMinute: 0 }, "INVALID_ARGUMENTS", "maximumPerMinute"],
      [{ maximumPerMinute: 1001 }, "INVALID_ARGUMENTS", "maximumPerMinute"],
      [{ maximumPerMinute: 1.5 }, "INVALID_ARGUMENTS", "maximumPerMinute"],
      [
        { timeoutConfig: { inProgressTimeoutInMinutes: 0 } },
        "INVALID_ARGUMENTS",
        "timeoutConfig.inProgressTimeoutInMinutes",
      ],
      [
        { timeoutConfig: { inProgressTimeoutInMinutes: 10081 } },
        "INVALID_ARGUMENTS",
        "timeoutConfig.inProgressTimeoutInMinutes",
      ],
      [
        {
          abortConfig: {
            criteriaList: [
              { failureType: "FAILED", action: "CANCEL", thresholdPercentage: 101, minNumberOfExecutedThings: 1 },
            ],
          },
        },
        "INVALID_ARGUMENTS",
        "abortConfig.criteriaList.0.thresholdPercentage",
      ],
      [
        { targets: { things: Array.from({ length: 100 }, (_, i) => `x${i}`), groups: ["g1"] } },
        "INVALID_ARGUMENTS",
        "targets",
      ],
      [{ domain: "east" }, "INVALID_ARGUMENTS", "domain"],
    ];
    for (const [body, key, property] of cases) {
      const res = await create(body);
      expect(await err(res), JSON.stringify(body)).toMatchObject({ status: 400, messageKey: key, property });
    }
    expect(
      (await create({ maximumPerMinute: 1000, timeoutConfig: { inProgressTimeoutInMinutes: 10080 } })).status,
    ).toBe(200);
  });

  it("answers FILE_NOT_FOUND, THING_NOT_FOUND and THING_GROUP_NOT_FOUND", async () => {
    expect(await err(await create({ jobDocumentId: "nope" }))).toMatchObject({
      status: 404,
      messageKey: "FILE_NOT_FOUND",
    });
    const pending = await json(
      await t.call("POST", "/thing-jobs/documents", { user: "alice", body: { documentName: "d", domain: "acme" } }),
    );
    expect((await err(await create({ jobDocumentId: pending.documentId }))).messageKey).toBe("FILE_NOT_FOUND");
    expect(await err(await create({ targets: { things: ["t1", "ghost"] } }))).toMatchObject({
      status: 404,
      messageKey: "THING_NOT_FOUND",
    });
    expect(await err(await create({ targets: { groups: ["nogroup"] } }))).toMatchObject({
      status: 404,
      messageKey: "THING_GROUP_NOT_FOUND",
    });
    // A thing or group the caller may not read does not exist for it.
    const eastDoc = await uploadDocument(t, {}, "east", "eastie");
    const eastCreate = (targets: unknown) =>
      t.call("POST", "/thing-jobs/jobs", {
        user: "eastie",
        body: { domain: "east", description: "d", jobDocumentId: eastDoc, targetSelection: "SNAPSHOT", targets },
      });
    expect((await err(await eastCreate({ things: ["t1"] }))).messageKey).toBe("THING_NOT_FOUND");
    expect((await err(await eastCreate({ groups: ["g1"] }))).messageKey).toBe("THING_GROUP_NOT_FOUND");
    expect((await eastCreate({ groups: ["meters"], things: ["e1"] })).status).toBe(200);
  });

  it("needs ThingJobs.CREATE and READ, ThingGroups.READ only for groups, Things.READ only for things", async () => {
    expect((await create({ targets: { things: ["t1"] } }, "thingsOnly")).status).toBe(200);
    expect((await err(await create({ targets: { groups: ["g1"] } }, "thingsOnly"))).messageKey).toBe("NOT_AUTHORIZED");
    expect((await create({ targets: { groups: ["g1"] } }, "groupsOnly")).status).toBe(200);
    expect((await err(await create({ targets: { things: ["t1"] } }, "groupsOnly"))).messageKey).toBe("NOT_AUTHORIZED");
    expect((await err(await create({}, "jobReader"))).messageKey).toBe("NOT_AUTHORIZED");
    expect((await err(await create({}, "creatorNoRead"))).messageKey).toBe("NOT_AUTHORIZED");
    expect((await err(await create({}, "reader"))).messageKey).toBe("NOT_AUTHORIZED");
    expect((await err(await create({}, "nobody"))).status).toBe(403);
  });
});

describe("operations on a job", () => {
  it("answer THING_JOB_NOT_FOUND for an unknown job", async () => {
    const ops: [string, string, unknown?][] = [
      ["PATCH", "/thing-jobs/jobs/nope", { comment: "x" }],
      ["GET", "/thing-jobs/jobs/nope"],
      ["GET", "/thing-jobs/jobs/nope/job-executions"],
      ["POST", "/thing-jobs/jobs/nope/targets", { targets: ["g1"] }],
      ["GET", "/thing-jobs/jobs/nope/job-executions/t1"],
      ["PATCH", "/thing-jobs/jobs/nope/job-executions/t1"],
      ["DELETE", "/thing-jobs/jobs/nope/job-executions/t1/executionNumber/1"],
      ["DELETE", "/thing-jobs/jobs/nope"],
      ["GET", "/thing-jobs/documents/nope"],
    ];
    for (const [method, path, body] of ops) {
      const res = await t.call(method, path, { user: "alice", body });
      expect(await err(res), `${method} ${path}`).toMatchObject({ status: 404, messageKey: "THING_JOB_NOT_FOUND" });
    }
  });

  it("check ThingJobs.READ, UPDATE and DELETE on the job's domain, and the ReadWrite role", async () => {
    const jobId = await createJob(t, { targets: { things: ["t3"] }, targetSelection: "CONTINUOUS" });
    const reads = [
      `/thing-jobs/jobs/${jobId}`,
      `/thing-jobs/jobs/${jobId}/job-executions`,
      `/thing-jobs/jobs/${jobId}/job-executions/t3`,
      `/thing-jobs/documents/${jobId}`,
    ];
    for (const path of reads) {
      expect((await t.call("GET", path, { user: "reader" })).status, path).toBe(200);
      expect((await err(await t.call("GET", path, { user: "eastie" }))).messageKey, path).toBe("NOT_AUTHORIZED");
    }
    const writes: [string, string, unknown?][] = [
      ["PATCH", `/thing-jobs/jobs/${jobId}`, {}],
      ["POST", `/thing-jobs/jobs/${jobId}/targets`, { targets: ["g3"] }],
      ["PATCH", `/thing-jobs/jobs/${jobId}/job-executions/t3`],
      ["DELETE", `/thing-jobs/jobs/${jobId}/job-executions/t3/executionNumber/1`],
      ["DELETE", `/thing-jobs/jobs/${jobId}?force=true`],
    ];
    for (const [method, path, body] of writes) {
      for (const user of ["reader", "jobReader", "eastie"]) {
        const res = await t.call(method, path, { user, body });
        expect((await err(res)).messageKey, `${user} ${method} ${path}`).toBe("NOT_AUTHORIZED");
      }
    }
  });

  it("LIST filters by status, targetSelection and group, within the caller's domains", async () => {
    const snapshot = await createJob(t, { targets: { groups: ["spare"] } });
    const continuous = await createJob(t, { targets: { things: ["t4"] }, targetSelection: "CONTINUOUS" });
    await t.call("PATCH", `/thing-jobs/jobs/${continuous}`, { user: "alice", body: { comment: "stop" } });
    const list = async (query: string, user = "alice") => {
      const res = await t.call("GET", `/thing-jobs/jobs${query}`, { user });
      expect(res.status).toBe(200);
      return (await json(res)) as { jobId: string; status: string; targetSelection: string; canceledAt?: string }[];
    };
    const all = await list("");
    expect(all.map((j) => j.jobId)).toEqual(expect.arrayContaining([snapshot, continuous]));
    expect(all.find((j) => j.jobId === continuous)).toMatchObject({
      status: "CANCELED",
      targetSelection: "CONTINUOUS",
      canceledAt: new Date(clock.now).toISOString(),
    });
    expect((await list("?status=CANCELED")).every((j) => j.status === "CANCELED")).toBe(true);
    expect((await list("?targetSelection=SNAPSHOT")).map((j) => j.jobId)).not.toContain(continuous);
    expect((await list("?group=g3")).map((j) => j.jobId)).toEqual([snapshot]);
    expect((await list("?group=spare")).map((j) => j.jobId)).toEqual([snapshot]);
    expect((await list("", "eastie")).map((j) => j.jobId)).not.toContain(snapshot);
    expect(await err(await t.call("GET", "/thing-jobs/jobs?group=ghost", { user: "alice" }))).toMatchObject({
      status: 404,
      messageKey: "THING_GROUP_NOT_FOUND",
    });
    expect((await err(await t.call("GET", "/thing-jobs/jobs?status=DONE", { user: "alice" }))).messageKey).toBe(
      "INVALID_ARGUMENTS",
    );
    expect((await err(await t.call("GET", "/thing-jobs/jobs", { user: "nobody" }))).messageKey).toBe("NOT_AUTHORIZED");
    expect((await err(await t.call("GET", "/thing-jobs/jobs?group=g1", { user: "eastie" }))).messageKey).toBe(
      "NOT_AUTHORIZED",
    );
  });

  it("CANCEL stores the comment, cancels queued executions and refuses a COMPLETED job", async () => {
    const jobId = await createJob(t, { targets: { things: ["t3", "t4"] } });
    const res = await t.call("PATCH", `/thing-jobs/jobs/${jobId}`, { user: "alice", body: { comment: "wrong file" } });
    expect(await json(res)).toEqual({ jobId, description: "a job" });
    const job = await describeJob(t, jobId);
    expect(job).toMatchObject({
      status: "CANCELED",
      comment: "wrong file",
      canceledAt: new Date(clock.now).toISOString(),
    });
    expect(job.jobProcessDetails).toMatchObject({ numberOfCanceledThings: 2, numberOfQueuedThings: 0 });
    expect(job.jobProcessDetails.processingTargets).toEqual({ groups: [], things: [] });
    const noBody = await t.call("PATCH", `/thing-jobs/jobs/${jobId}`, { user: "alice" });
    expect(noBody.status).toBe(200);

    const done = await createJob(t, { targets: { things: ["t3"] } });
    await t.call("PATCH", `/thing-jobs/jobs/${done}/job-executions/t3`, { user: "alice" });
    expect((await describeJob(t, done)).status).toBe("COMPLETED");
    expect(await err(await t.call("PATCH", `/thing-jobs/jobs/${done}`, { user: "alice", body: {} }))).toMatchObject({
      status: 409,
      messageKey: "INVALID_ACTION",
    });
  });

  it("DELETE needs force for a job IN_PROGRESS (409 INVALID_ACTION) and deletes a terminal one without", async () => {
    const running = await createJob(t, { targets: { things: ["t3"] } });
    expect(await err(await t.call("DELETE", `/thing-jobs/jobs/${running}`, { user: "alice" }))).toMatchObject({
      status: 409,
      messageKey: "INVALID_ACTION",
    });
    expect((await t.call("DELETE", `/thing-jobs/jobs/${running}?force=false`, { user: "alice" })).status).toBe(409);
    expect((await t.call("DELETE", `/thing-jobs/jobs/${running}?force=true`, { user: "alice" })).status).toBe(200);
    expect((await t.call("GET", `/thing-jobs/jobs/${running}`, { user: "alice" })).status).toBe(404);

    const canceled = await createJob(t, { targets: { things: ["t3"] } });
    await t.call("PATCH", `/thing-jobs/jobs/${canceled}`, { user: "alice", body: {} });
    expect((await t.call("DELETE", `/thing-jobs/jobs/${canceled}`, { user: "alice" })).status).toBe(200);
    expect((await err(await t.call("DELETE", `/thing-jobs/jobs/x?force=maybe`, { user: "alice" }))).messageKey).toBe(
      "INVALID_ARGUMENTS",
    );
  });
});

describe("executions", () => {
  it("LIST_JOB_EXECUTIONS and GET_JOB_EXECUTION answer summaries and the full form", async () => {
    const jobId = await createJob(t, { targets: { things: ["t3", "t4"] } });
    const res = await t.call("GET", `/thing-jobs/jobs/${jobId}/job-executions`, { user: "alice" });
    const list = await json(res);
    expect(list).toEqual([
      {
        jobId,
        thingName: "t3",
        jobExecutionSummary: { status: "QUEUED", queuedAt: clock.now, lastUpdatedAt: clock.now, executionNumber: "1" },
      },
      {
        jobId,
        thingName: "t4",
        jobExecutionSummary: { status: "QUEUED", queuedAt: clock.now, lastUpdatedAt: clock.now, executionNumber: "1" },
      },
    ]);
    const one = await json(
      await t.call("GET", `/thing-jobs/jobs/${jobId}/job-executions/t3?executionNumber=1`, { user: "alice" }),
    );
    expect(one).toEqual({
      jobId,
      thingName: "t3",
      status: "QUEUED",
      queuedAt: clock.now,
      lastUpdatedAt: clock.now,
      executionNumber: "1",
      versionNumber: 1,
      forceCanceled: false,
    });
    expect(
      await err(
        await t.call("GET", `/thing-jobs/jobs/${jobId}/job-executions/t3?executionNumber=2`, { user: "alice" }),
      ),
    ).toMatchObject({
      status: 404,
      messageKey: "THING_JOB_NOT_FOUND",
    });
    expect(
      (
        await err(
          await t.call("GET", `/thing-jobs/jobs/${jobId}/job-executions/t3?executionNumber=x`, { user: "alice" }),
        )
      ).messageKey,
    ).toBe("INVALID_ARGUMENTS");
    expect(
      (await err(await t.call("GET", `/thing-jobs/jobs/${jobId}/job-executions?status=LOST`, { user: "alice" })))
        .messageKey,
    ).toBe("INVALID_ARGUMENTS");
    await t.call("PATCH", `/thing-jobs/jobs/${jobId}/job-executions/t3`, { user: "alice" });
    const canceled = await json(
      await t.call("GET", `/thing-jobs/jobs/${jobId}/job-executions?status=CANCELED`, { user: "alice" }),
    );
    expect(canceled.map((e: { thingName: string }) => e.thingName)).toEqual(["t3"]);
    expect(
      await json(await t.call("GET", `/thing-jobs/jobs/${jobId}/job-executions?status=SUCCEEDED`, { user: "alice" })),
    ).toEqual([]);
    expect(
      (await t.call("GET", `/thing-jobs/jobs/${jobId}/job-executions?status=SUCCESS`, { user: "alice" })).status,
    ).toBe(200);
  });

  it("CANCEL_JOB_EXECUTION checks expectedVersion and refuses a terminal execution", async () => {
    const jobId = await createJob(t, { targets: { things: ["t3", "t4"] } });
    const cancel = (q: string) => t.call("PATCH", `/thing-jobs/jobs/${jobId}/job-executions/t3${q}`, { user: "alice" });
    expect(await err(await cancel("?expectedVersion=7"))).toMatchObject({
      status: 409,
      messageKey: "INVALID_ACTION",
      property: "expectedVersion",
    });
    expect((await err(await cancel("?expectedVersion=v1"))).messageKey).toBe("INVALID_ARGUMENTS");
    const ok = await cancel("?expectedVersion=1");
    expect(ok.status).toBe(200);
    expect(await ok.text()).toBe("");
    expect((await err(await cancel(""))).status).toBe(409);
    expect(
      (await err(await t.call("PATCH", `/thing-jobs/jobs/${jobId}/job-executions/ghost`, { user: "alice" })))
        .messageKey,
    ).toBe("THING_JOB_NOT_FOUND");
  });

  it("DELETE_JOB_EXECUTION removes one execution, and a snapshot job completes when every target is terminal", async () => {
    const jobId = await createJob(t, { targets: { things: ["t3", "t4"] } });
    expect(
      (await t.call("DELETE", `/thing-jobs/jobs/${jobId}/job-executions/t3/executionNumber/1`, { user: "alice" }))
        .status,
    ).toBe(200);
    expect((await t.call("GET", `/thing-jobs/jobs/${jobId}/job-executions/t3`, { user: "alice" })).status).toBe(404);
    expect((await describeJob(t, jobId)).status).toBe("IN_PROGRESS");
    clock.advance(1000);
    await t.call("PATCH", `/thing-jobs/jobs/${jobId}/job-executions/t4`, { user: "alice" });
    const job = await describeJob(t, jobId);
    expect(job).toMatchObject({ status: "COMPLETED", completedAt: new Date(clock.now).toISOString() });
    expect(job.jobProcessDetails).toMatchObject({ numberOfCanceledThings: 1, numberOfQueuedThings: 0 });
  });
});

describe("continuous jobs", () => {
  it("start an execution for a thing added to a target group and mark REMOVED a queued thing taken out", async () => {
    const { registry } = t.dms.services;
    await registry.putGroup({ id: "cg", name: "continuous-group", domain: "acme", things: ["t3"] }, "create");
    const jobId = await createJob(t, { targets: { groups: ["cg"] }, targetSelection: "CONTINUOUS" });
    await registry.addMembers("cg", ["t4"]);
    let job = await describeJob(t, jobId);
    expect(job.jobProcessDetails.numberOfQueuedThings).toBe(2);
    await registry.removeMembers("cg", ["t4"]);
    job = await describeJob(t, jobId);
    expect(job.jobProcessDetails).toMatchObject({ numberOfQueuedThings: 1, numberOfRemovedThings: 1 });
    await registry.addMembers("cg", ["t4"]);
    const again = await json(await t.call("GET", `/thing-jobs/jobs/${jobId}/job-executions/t4`, { user: "alice" }));
    expect(again).toMatchObject({ status: "QUEUED", executionNumber: "2" });
    await t.call("PATCH", `/thing-jobs/jobs/${jobId}/job-executions/t3`, { user: "alice" });
    await t.call("PATCH", `/thing-jobs/jobs/${jobId}/job-executions/t4`, { user: "alice" });
    expect((await describeJob(t, jobId)).status).toBe("IN_PROGRESS");
  });

  it("ASSOCIATE_TARGETS_WITH_JOB adds groups to a continuous job only", async () => {
    const jobId = await createJob(t, { targets: { things: ["t1"] }, targetSelection: "CONTINUOUS" });
    const res = await t.call("POST", `/thing-jobs/jobs/${jobId}/targets`, {
      user: "alice",
      body: { targets: ["spare"], comment: "more" },
    });
    expect(await json(res)).toEqual({ jobId, description: "a job" });
    const job = await describeJob(t, jobId);
    expect(job).toMatchObject({ comment: "more", targets: { groups: ["spare"], things: ["t1"] } });
    expect(job.jobProcessDetails.numberOfQueuedThings).toBe(3);
    const post = (id: string, body: unknown) =>
      t.call("POST", `/thing-jobs/jobs/${id}/targets`, { user: "alice", body });
    expect((await err(await post(jobId, {}))).messageKey).toBe("PROPERTY_REQUIRED");
    expect((await err(await post(jobId, { targets: ["ghost"] }))).messageKey).toBe("THING_GROUP_NOT_FOUND");
    const snapshot = await createJob(t, { targets: { things: ["t1"] } });
    expect((await err(await post(snapshot, { targets: ["spare"] }))).messageKey).toBe("INVALID_ARGUMENTS");
  });
});

describe("deleted things", () => {
  it("mark the open executions REMOVED, so a snapshot job can still complete", async () => {
    await t.dms.services.registry.putThing({ thingName: "doomed", thingType: "10", domain: "acme" }, "create");
    const jobId = await createJob(t, { targets: { things: ["doomed"] } });
    await t.dms.services.registry.deleteThing("doomed");
    const job = await describeJob(t, jobId);
    expect(job).toMatchObject({ status: "COMPLETED", jobProcessDetails: { numberOfRemovedThings: 1 } });
  });
});

describe("the API description", () => {
  it("declares every thing-job operation", async () => {
    const doc = await json(await fetch(`${t.url}/openapi.json`));
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        "/thing-jobs/documents",
        "/thing-jobs/documents/{jobId}",
        "/thing-jobs/jobs",
        "/thing-jobs/jobs/{jobId}",
        "/thing-jobs/jobs/{jobId}/targets",
        "/thing-jobs/jobs/{jobId}/job-executions",
        "/thing-jobs/jobs/{jobId}/job-executions/{thingName}",
        "/thing-jobs/jobs/{jobId}/job-executions/{thingName}/executionNumber/{executionNumber}",
      ]),
    );
  });
});
