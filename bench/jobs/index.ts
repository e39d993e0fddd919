/**
 * bench/jobs: one SNAPSHOT job to many things (through thing groups), taken by
 * simulated MQTT devices in a child process. Measures the time from CREATE to
 * every execution SUCCEEDED and the notifications delivered per second, with
 * the embedded broker and with the machine's Mosquitto side by side.
 *
 *   npx tsx bench/jobs/index.ts [--things 2000] [--only embedded|mosquitto]
 */
import { fork, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { cpus, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { loadConfig } from "../../src/config/index.js";
import { startDms, type Dms } from "../../src/service.js";
import { generateDeviceSecret } from "../../src/things/index.js";
import { writeSection } from "../results.js";

const here = dirname(fileURLToPath(import.meta.url));
const THINGS = Number(argument("--things") ?? 2000);
const GROUPS = 10;
const API_KEY = "bench-api-key-0001";
/** One generated secret for every device: the keyed hash binds it to each thing's name. */
const PASSWORD = generateDeviceSecret();
const MOSQUITTO = "mqtt://127.0.0.1:1883";

interface Result {
  scenario: string;
  connectMs: number;
  createMs: number;
  totalMs: number;
  notifications: number;
  /** From CREATE to the last notification a device received. */
  notifyMs: number;
  succeeded: number;
}

function argument(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

function progress(line: string): void {
  process.stderr.write(`  ${line}\n`);
}

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host: "127.0.0.1", port }, () => {
      s.end();
      resolve(true);
    });
    s.on("error", () => resolve(false));
  });
}

async function startService(dataDir: string, mqttUrl: string | undefined): Promise<Dms> {
  const provision = join(dataDir, "provision.json");
  writeFileSync(
    provision,
    JSON.stringify({
      apiKeys: [API_KEY],
      domains: [{ id: "root" }, { id: "acme", parent: "root" }],
      users: [
        {
          userName: "alice",
          password: "alice-pw",
          role: "ReadWrite",
          homeDomain: "acme",
          privileges: { acme: ["ThingJobs.*", "Things.READ", "ThingGroups.READ"] },
        },
      ],
      thingTypes: [{ id: "10", label: "Tracker", domain: "acme", resources: [] }],
    }),
  );
  const config = loadConfig({
    DMS_HTTP_PORT: "0",
    DMS_HTTP_HOST: "127.0.0.1",
    DMS_MQTT_PORT: "0",
    DMS_DATA_DIR: dataDir,
    DMS_PROVISION: provision,
    DMS_LOG_LEVEL: "silent",
    DMS_ROLES: "api,mqtt,scheduler",
    DMS_JWT_SECRET: "bench-secret-bench-secret-bench-secret",
    ...(mqttUrl ? { MQTT_URL: mqttUrl } : {}),
  });
  return startDms(config);
}

async function provisionThings(dms: Dms, names: string[]): Promise<void> {
  const { registry } = dms.services;
  const things = names.map((thingName) => ({ thingName, thingType: "10", domain: "acme", secret: PASSWORD }));
  const failed = (await registry.putThings(things, { mode: "create" })).filter((o) => o.status === "failed");
  if (failed.length > 0) throw new Error(`${failed.length} things not created`);
  const per = Math.ceil(names.length / GROUPS);
  for (let g = 0; g < GROUPS; g++) {
    await registry.putGroup({ id: `bg${g}`, name: `bench-${g}`, domain: "acme" }, "create");
    await registry.addMembers(`bg${g}`, names.slice(g * per, (g + 1) * per));
  }
}

function request<T>(child: ChildProcess, message: Record<string, unknown>, answer: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const on = (m: { cmd: string; message?: string }): void => {
      if (m.cmd === answer || m.cmd === "error") {
        child.off("message", on);
        if (m.cmd === "error") reject(new Error(m.message));
        else resolve(m as T);
      }
    };
    child.on("message", on);
    child.send(message);
  });
}

async function rest(url: string, method: string, path: string, token: string | undefined, body: unknown) {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { "content-type": "application/json", "x-api-key": API_KEY, ...(token ? { authorization: token } : {}) },
    body: JSON.stringify(body),
  });
  if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as Record<string, string> & { credentials: { token: string } };
}

async function scenario(name: string, mqttUrl: string | undefined): Promise<Result> {
  const dataDir = mkdtempSync(join(tmpdir(), "dms-bench-jobs-"));
  const dms = await startService(dataDir, mqttUrl);
  const prefix = `b${randomBytes(3).toString("hex")}-`;
  const names = Array.from({ length: THINGS }, (_, i) => `${prefix}${i}`);
  const child = fork(join(here, "devices.ts"), [], { execArgv: ["--import", "tsx"], stdio: "inherit" });
  try {
    progress(`${name}: provisioning ${THINGS} things`);
    await provisionThings(dms, names);
    progress(`${name}: connecting ${THINGS} devices`);
    const brokerUrl = mqttUrl ?? `mqtt://127.0.0.1:${dms.services.deviceBridge!.port}`;
    const connected = await request<{ ms: number }>(
      child,
      { cmd: "connect", url: brokerUrl, names, password: PASSWORD },
      "connected",
    );
    progress(`${name}: devices connected in ${(connected.ms / 1000).toFixed(1)} s`);
    const url = dms.url!;
    const token = (await rest(url, "POST", "/auth/login", undefined, { userName: "alice", password: "alice-pw" }))
      .credentials.token;
    const ticket = await rest(url, "POST", "/thing-jobs/documents", token, { documentName: "fw", domain: "acme" });
    const put = await fetch(`${url}${new URL(ticket.signedUrl!).pathname}${new URL(ticket.signedUrl!).search}`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ operation: "update", version: "2.1" }),
    });
    if (put.status !== 200) throw new Error(`PUT of the job document: ${put.status}`);

    const jobs = dms.services.jobs!;
    const started = performance.now();
    const startedAt = Date.now();
    const created = await rest(url, "POST", "/thing-jobs/jobs", token, {
      domain: "acme",
      description: "bench",
      jobDocumentId: ticket.documentId,
      targets: { groups: Array.from({ length: GROUPS }, (_, g) => `bg${g}`) },
      targetSelection: "SNAPSHOT",
    });
    const createMs = performance.now() - started;
    const jobId = created.jobId!;
    progress(`${name}: CREATE answered in ${createMs.toFixed(0)} ms`);
    const deadline = Date.now() + 10 * 60_000;
    let report = Date.now() + 5000;
    while ((await jobs.jobRow(jobId))?.status !== "COMPLETED") {
      if (Date.now() > deadline) throw new Error("the job did not complete within 10 minutes");
      if (Date.now() > report) {
        report = Date.now() + 5000;
        progress(`${name}: ${JSON.stringify((await jobs.describe(jobId)).jobProcessDetails)}`);
      }
      await new Promise((r) => setTimeout(r, 5));
    }
    const totalMs = performance.now() - started;
    const succeeded = (await jobs.describe(jobId)).jobProcessDetails.numberOfSucceededThings;
    // The last notify/notify-next pairs are still on their way when the job completes: wait until quiet.
    let stats = { notifications: -1, lastNotificationAt: 0 };
    for (const giveUp = Date.now() + 30_000; Date.now() < giveUp;) {
      await new Promise((r) => setTimeout(r, 1000));
      const now = await request<typeof stats>(child, { cmd: "stats" }, "stats");
      if (now.notifications === stats.notifications) break;
      stats = now;
    }
    return {
      scenario: name,
      connectMs: connected.ms,
      createMs,
      totalMs,
      notifications: stats.notifications,
      notifyMs: stats.lastNotificationAt - startedAt,
      succeeded,
    };
  } finally {
    child.send({ cmd: "stop" });
    await new Promise((r) => child.once("exit", r));
    await dms.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

function table(results: Result[]): string {
  const rows = results.map((r) => {
    const seconds = r.totalMs / 1000;
    return `| ${r.scenario} | ${THINGS} | ${r.succeeded} | ${(r.connectMs / 1000).toFixed(1)} | ${r.createMs.toFixed(0)} | ${seconds.toFixed(2)} | ${(r.succeeded / seconds).toFixed(0)} | ${r.notifications} | ${(r.notifications / (r.notifyMs / 1000)).toFixed(0)} |`;
  });
  const head = [
    "| broker | things (via 10 groups) | SUCCEEDED | devices connected in (s) | CREATE answered in (ms) | CREATE → all SUCCEEDED (s) | executions/s | notifications delivered | notifications/s |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
  ];
  const out = [...head, ...rows];
  if (results.length === 2) {
    const [a, b] = results as [Result, Result];
    out.push(
      "",
      `Ratio ${b.scenario} / ${a.scenario}: CREATE → all SUCCEEDED ${(b.totalMs / a.totalMs).toFixed(2)}×, notifications/s ${(b.notifications / b.notifyMs / (a.notifications / a.notifyMs)).toFixed(2)}×.`,
    );
  }
  return out.join("\n");
}

async function main(): Promise<void> {
  const header = [
    "## bench/jobs: a thing job to many things over MQTT",
    "",
    `Machine: ${cpus()[0]?.model ?? "unknown"}, ${cpus().length} cores, Node ${process.version}, ${new Date().toISOString()}.`,
    `Rerun: \`npx tsx bench/jobs/index.ts --things ${THINGS}\`.`,
    "",
    `One SNAPSHOT job targeting ${GROUPS} thing groups; each thing is a real mqtt.js client in a child process that starts the job on \`notify-next\` with \`start-next\` and reports \`SUCCEEDED\` with \`expectedVersion\`. Time runs from the CREATE request to the job's COMPLETED status (every execution SUCCEEDED); notifications are the \`notify\` and \`notify-next\` messages the devices received (six per device: queued, started, done). Setup (things, groups, connections) is not timed; the devices use generated secrets (keyed hash, microseconds per connect).`,
  ].join("\n");
  console.log(header);
  const only = argument("--only");
  const results: Result[] = only === "mosquitto" ? [] : [await scenario("embedded (aedes)", undefined)];
  if (only === "embedded") console.log("\n--only embedded: the Mosquitto column is left out.");
  else if (await listening(1883)) results.push(await scenario("Mosquitto 127.0.0.1:1883", MOSQUITTO));
  else console.log("\nMosquitto is not listening on 127.0.0.1:1883: the external-broker column is left out.");
  const section = `${header}\n\n${table(results)}`;
  console.log(`\n${table(results)}`);
  writeSection("jobs", section);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
