import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { copyStore, StoreCopyError, type TableCount } from "../../src/store-copy/index.js";
import { connectAs } from "../support/device.js";
import { startTestDms, type TestDms } from "../support/dms.js";
import { json, type Payload } from "../support/http.js";
import { createPgDatabase, type PgDatabase } from "../support/postgres.js";
import { until } from "../support/wait.js";
import { createJob, local, uploadDocument } from "../jobs/support.js";
import { ruleBody } from "../rules/fixtures.js";

/**
 * Moving an installation: a dms on SQLite is filled through REST and stopped, its data directory
 * copied into an empty PostgreSQL database, and a dms on that database with a new, empty data
 * directory answers everything the first one held.
 */

const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
const DAY_MS = 86_400_000;
/** A file of two whole chunks and part of a third in PostgreSQL's file store. */
const BIG = randomBytes(2.5 * 1024 * 1024);
const ROLES = { DMS_ROLES: "api,engine,actions,mqtt,scheduler", DMS_MQTT_PORT: "0" };
/** The keys come from the key store on both sides: DMS_JWT_SECRET unset, so the token key moves too. */
const SQLITE_ENV = { ...ROLES, DMS_DATABASE_URL: "", DMS_JWT_SECRET: "" };

const sqliteDir = mkdtempSync(join(tmpdir(), "dms-copy-sqlite-"));
const pgDir = mkdtempSync(join(tmpdir(), "dms-copy-pg-"));
let database: PgDatabase;
let counts: TableCount[];
let moved: TestDms;

/** What the SQLite installation held and answered, to be met again on PostgreSQL. */
const before: Record<string, Payload> = {};

const findQuery = {
  query: { size: 100, query: { range: { timestamp: { gte: "now-30d" } } }, sort: [{ timestamp: "asc" }] },
};

async function ok(res: Response): Promise<Payload> {
  const body = await json(res);
  expect(res.status, JSON.stringify(body)).toBe(200);
  return body;
}

async function events(t: TestDms): Promise<Payload[]> {
  return (await ok(await t.call("GET", "/events", { user: "alice" }))).events;
}

async function login(t: TestDms, userName: string, password: string): Promise<Response> {
  return t.call("POST", "/auth/login", { body: { userName, password } });
}

/** Fills a dms on SQLite through its interface: every table of the copy gets rows. */
async function fill(t: TestDms): Promise<void> {
  await ok(
    await t.call("POST", "/admin/users", {
      user: "admin",
      body: { userName: "carol", password: "carol-pw-1", role: "Read", homeDomain: "acme", privileges: {} },
    }),
  );
  const thing = await ok(
    await t.call("POST", "/admin/things", {
      user: "admin",
      body: { thingName: "moved-1", thingType: "10", domain: "acme", generateSecret: true },
    }),
  );
  before.deviceSecret = thing.secret;
  before.rule = await ok(await t.call("POST", "/rules", { user: "alice", body: ruleBody() }));

  const now = Date.now();
  const posted = await ok(
    await t.call("POST", "/observations", {
      user: "admin",
      body: [
        { thingName: "t1", timestamp: now - 3 * DAY_MS, state: { temp: 12 } },
        { thingName: "t2", timestamp: now - DAY_MS, state: { temp: 14, latlng: "59.91,10.75" } },
        { thingName: "t1", timestamp: now - 1000, state: { temp: 40 } },
        { thingName: "t1", timestamp: "not a time", state: { temp: 1 } },
      ],
    }),
  );
  expect(posted).toMatchObject({ accepted: 3, triggered: 1 });
  await until(async () => (await events(t)).length === 1, 10_000, "the rule's event");

  before.jobId = await createJob(t, { targets: { things: ["t1"] } });
  const ticket = await ok(
    await t.call("POST", "/thing-jobs/documents", { user: "alice", body: { documentName: "later", domain: "acme" } }),
  );
  before.documentTicket = ticket.signedUrl;
  await uploadDocument(t);

  for (const [fileName, body] of [
    ["notes.txt", "moved bytes"],
    ["big.bin", BIG],
    ["empty.txt", ""],
  ] as const) {
    const url = (
      await ok(await t.call("GET", `/files/upload-url?thingName=t1&fileName=${fileName}`, { user: "alice" }))
    ).url;
    expect((await fetch(url, { method: "PUT", body })).status).toBe(200);
  }
  before.downloadUrl = (
    await ok(await t.call("GET", "/files/download-url?thingName=t1&fileName=notes.txt", { user: "alice" }))
  ).url;

  const exportJob = await ok(
    await t.call("POST", "/observations/export/jobs", {
      user: "alice",
      body: {
        jobName: "temps",
        type: "instant",
        thingType: "10",
        from: new Date(now - 7 * DAY_MS).toISOString().replace(/\.\d+Z$/, "Z"),
        to: new Date(now + DAY_MS).toISOString().replace(/\.\d+Z$/, "Z"),
        resources: ["temp"],
      },
    }),
  );
  let executions: Payload[] = [];
  await until(
    async () => {
      executions = (
        await ok(await t.call("GET", `/observations/export/jobs/${exportJob.id}/executions`, { user: "alice" }))
      ).exportJobExecutions;
      return executions.length === 1 && executions[0].status === "SUCCEEDED";
    },
    10_000,
    "the export",
  );
  before.exportExecution = await ok(
    await t.call("GET", `/observations/export/executions/${executions[0].id}`, { user: "alice" }),
  );

  const session = await ok(await login(t, "alice", "alice-pw"));
  before.token = session.credentials.token;
  before.refreshToken = session.credentials.refreshToken;
  before.find = await ok(await t.call("POST", "/observations/find", { user: "admin", body: findQuery }));
  before.events = await events(t);
  before.job = await ok(await t.call("GET", `/thing-jobs/jobs/${before.jobId}`, { user: "alice" }));
  before.files = await ok(await t.call("GET", "/files?thingName=t1", { user: "alice" }));
  before.exportJobs = await ok(await t.call("GET", "/observations/export/jobs", { user: "alice" }));
  before.deadLetters = await ok(await t.call("GET", "/observations/dead-letters", { user: "admin" }));
  before.rules = await ok(await t.call("GET", "/rules", { user: "admin" }));
}

beforeAll(async () => {
  const sqlite = await startTestDms({ dataDir: sqliteDir, env: SQLITE_ENV });
  try {
    await fill(sqlite);
  } finally {
    await sqlite.close();
  }
  database = await createPgDatabase([]);
  counts = (await copyStore({ from: sqliteDir, to: database.url })).counts;
  // No provisioning on this side: whatever it answers came through the copy.
  moved = await startTestDms({
    dataDir: pgDir,
    provision: {},
    env: { ...ROLES, DMS_DATABASE_URL: database.url, DMS_JWT_SECRET: "" },
  });
}, 240_000);

afterAll(async () => {
  await moved?.close();
  await database?.drop();
  rmSync(sqliteDir, { recursive: true, force: true });
  rmSync(pgDir, { recursive: true, force: true });
});

describe("npm run store:copy: a SQLite installation into an empty PostgreSQL database", () => {
  it("reports equal counts per table, every table of the installation holding rows", () => {
    for (const c of counts) expect(c.postgres, c.table).toBe(c.sqlite);
    const held = Object.fromEntries(counts.map((c) => [c.table, c.sqlite]));
    const filled = [
      "domains",
      "users",
      "user_privileges",
      "api_keys",
      "refresh_tokens",
      "thing_types",
      "thing_type_resources",
      "things",
      "thing_groups",
      "thing_group_members",
      "thing_provisions",
      "file_versions",
      "file_objects",
      "file_chunks (bytes)",
      "rules",
      "action_outbox",
      "events",
      "engine_dead_letters",
      "engine_thing_state",
      "export_jobs",
      "export_executions",
      "job_documents",
      "thing_jobs",
      "job_executions",
      "observations",
      "service_keys",
    ];
    for (const table of filled) expect(held[table], table).toBeGreaterThan(0);
    expect(held.observations).toBe(3);
    expect(held["service_keys"]).toBe(3);
  });

  it("the same user logs in, and a token and a refresh token made before the move are good", async () => {
    expect((await login(moved, "carol", "carol-pw-1")).status).toBe(200);
    expect((await login(moved, "carol", "wrong-pw-1")).status).not.toBe(200);
    const rules = await moved.call("GET", "/rules", { headers: { authorization: before.token } });
    expect(await ok(rules)).toEqual(before.rules);
    const refreshed = await moved.call("POST", "/auth/refresh", { body: { refreshToken: before.refreshToken } });
    expect(refreshed.status).toBe(200);
  });

  it("the thing's generated device secret still verifies at the MQTT bridge", async () => {
    expect(await connectAs(moved, "moved-1", before.deviceSecret)).toBe("connected");
    expect(await connectAs(moved, "moved-1", `${before.deviceSecret}x`)).not.toBe("connected");
  });

  it("the file downloads, through a URL signed before the move too", async () => {
    // A listing signs each entry's URL anew: the rest of it is as it was.
    const unsigned = (listing: Payload): Payload => ({
      ...listing,
      files: listing.files.map(({ url: _url, ...entry }: Payload) => entry),
    });
    const after = await ok(await moved.call("GET", "/files?thingName=t1", { user: "alice" }));
    expect(unsigned(after)).toEqual(unsigned(before.files));
    expect(after.files).toHaveLength(3);
    const signedBefore = await fetch(local(moved, before.downloadUrl));
    expect(signedBefore.status).toBe(200);
    expect(await signedBefore.text()).toBe("moved bytes");
    const url = (
      await ok(await moved.call("GET", "/files/download-url?thingName=t1&fileName=notes.txt", { user: "alice" }))
    ).url;
    expect(await (await fetch(local(moved, url))).text()).toBe("moved bytes");
    const download = async (fileName: string): Promise<Buffer> => {
      const signed = await ok(
        await moved.call("GET", `/files/download-url?thingName=t1&fileName=${fileName}`, { user: "alice" }),
      );
      return Buffer.from(await (await fetch(local(moved, signed.url))).arrayBuffer());
    };
    expect((await download("big.bin")).equals(BIG)).toBe(true);
    expect(await download("empty.txt")).toHaveLength(0);
  });

  it("FIND answers the same observations with the same ids", async () => {
    const after = await ok(await moved.call("POST", "/observations/find", { user: "admin", body: findQuery }));
    expect(after.hits).toEqual(before.find.hits);
    expect(after.hits.total).toBe(3);
  });

  it("events, dead letters, the thing job, the export and its execution read back as they were", async () => {
    expect(await events(moved)).toEqual(before.events);
    expect(await ok(await moved.call("GET", "/observations/dead-letters", { user: "admin" }))).toEqual(
      before.deadLetters,
    );
    expect(await ok(await moved.call("GET", `/thing-jobs/jobs/${before.jobId}`, { user: "alice" }))).toEqual(
      before.job,
    );
    expect(await ok(await moved.call("GET", "/observations/export/jobs", { user: "alice" }))).toEqual(
      before.exportJobs,
    );
    const execution = await ok(
      await moved.call("GET", `/observations/export/executions/${before.exportExecution.id}`, { user: "alice" }),
    );
    expect(execution).toEqual(before.exportExecution);
  });

  it("a job document upload URL signed before the move takes the document", async () => {
    const put = await fetch(local(moved, before.documentTicket), {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ operation: "update" }),
    });
    expect(put.status).toBe(200);
  });

  it("the rule fires the same, and the next rule id continues the sequence", async () => {
    const posted = await ok(
      await moved.call("POST", "/observations", {
        user: "admin",
        body: [{ thingName: "t1", timestamp: Date.now(), state: { temp: 45 } }],
      }),
    );
    expect(posted).toMatchObject({ accepted: 1, triggered: 1 });
    let after: Payload[] = [];
    await until(async () => (after = await events(moved)).length === 2, 10_000, "the second event");
    expect(after.find((e: Payload) => e.id !== before.events[0].id)).toMatchObject({
      ruleId: before.rule.id,
      thingName: "t1",
      message: before.events[0].message,
      classification: "ALARM",
    });
    const next = await ok(await moved.call("POST", "/rules", { user: "alice", body: ruleBody({ name: "next" }) }));
    const number = (id: string): number => Number(/\d+$/.exec(id)![0]);
    expect(number(next.id)).toBe(number(before.rule.id) + 1);
  });

  it("nothing of the moved installation is in its data directory", () => {
    expect(readdirSync(pgDir)).toEqual(["provision.json"]);
  });

  it("a second copy into the now non-empty database is refused with exit code 1", async () => {
    const run = promisify(execFile)(
      process.execPath,
      ["--import", "tsx", "scripts/store-copy.ts", "--from", sqliteDir, "--to", database.url],
      { cwd: repoRoot },
    );
    await expect(run).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/is not empty \(table \w+ has rows\)/),
    });
  });

  it("a directory without dms.sqlite is refused before the database is touched", async () => {
    const empty = mkdtempSync(join(tmpdir(), "dms-copy-none-"));
    try {
      await expect(copyStore({ from: empty, to: database.url })).rejects.toThrow(StoreCopyError);
      await expect(copyStore({ from: empty, to: database.url })).rejects.toThrow(/holds no dms.sqlite/);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
