/**
 * bench/fleet ingest: 1,000 devices publishing QoS 1 observations, one in flight each, from child
 * processes. Same clients, same run: (a) to Mosquitto with one plain subscriber counting what it
 * relays, (b) to dms's embedded broker, counting observations stored and evaluated. Ratio b/a.
 *   npx tsx bench/fleet/ingest.ts [devices=1000] [seconds=10]
 */
import { fork, type ChildProcess } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import mqtt from "mqtt";
import { loadConfig } from "../../src/config/index.js";
import { startDms } from "../../src/service.js";
import { writeSection } from "../results.js";

const here = dirname(fileURLToPath(import.meta.url));
const DEVICES = Number(process.argv[2] ?? 1000);
const SECONDS = Number(process.argv[3] ?? 10);
const CHILDREN = 2;
const names = Array.from({ length: DEVICES }, (_, i) => `bench-dev-${i}`);

/** Runs the publishers against `url` for SECONDS after all connected; `count()` is read at start and end. */
async function phase(url: string, count: () => number): Promise<number> {
  const children: ChildProcess[] = [];
  const per = Math.ceil(DEVICES / CHILDREN);
  const connected: Promise<void>[] = [];
  for (let c = 0; c < CHILDREN; c++) {
    const child = fork(join(here, "publishers.ts"), [], { execArgv: ["--import", "tsx"], stdio: "inherit" });
    children.push(child);
    connected.push(new Promise((resolve) => child.once("message", () => resolve())));
    child.send({ cmd: "run", url, names: names.slice(c * per, (c + 1) * per), password: "bench-secret-0123456789" });
  }
  await Promise.all(connected);
  await new Promise((r) => setTimeout(r, 2000)); // warm-up
  const from = count();
  const t0 = performance.now();
  for (let s = 0; s < SECONDS; s++) {
    await new Promise((r) => setTimeout(r, 1000));
    console.log(`  ${s + 1}/${SECONDS} s: ${Math.round((count() - from) / ((performance.now() - t0) / 1000))}/s`);
  }
  const rate = (count() - from) / ((performance.now() - t0) / 1000);
  await Promise.all(
    children.map(
      (ch) => new Promise<void>((resolve) => (ch.once("message", () => resolve()), ch.send({ cmd: "stop" }))),
    ),
  );
  for (const ch of children) ch.kill();
  return rate;
}

async function mosquittoRate(): Promise<number> {
  const sub = await mqtt.connectAsync("mqtt://127.0.0.1:1883", { clientId: `bench-sub-${process.pid}` });
  let received = 0;
  sub.on("message", () => received++);
  await sub.subscribeAsync("things/+/observations", { qos: 0 });
  const rate = await phase("mqtt://127.0.0.1:1883", () => received);
  await sub.endAsync(true);
  return rate;
}

async function dmsRate(): Promise<number> {
  const dataDir = mkdtempSync(join(tmpdir(), "dms-bench-fleet-"));
  const provision = join(dataDir, "provision.json");
  writeFileSync(
    provision,
    JSON.stringify({
      domains: [{ id: "root" }, { id: "fleet", parent: "root" }],
      thingTypes: [
        { id: "sensor", domain: "fleet", resources: [{ name: "temp", dataType: "long", resourceType: "thing" }] },
      ],
      things: names.map((thingName) => ({
        thingName,
        thingType: "sensor",
        domain: "fleet",
        secret: "bench-secret-0123456789",
      })),
    }),
  );
  const dms = await startDms(
    loadConfig({
      DMS_DATA_DIR: dataDir,
      DMS_PROVISION: provision,
      DMS_ROLES: "engine,mqtt",
      DMS_MQTT_PORT: "0",
      DMS_HTTP_HOST: "127.0.0.1",
      DMS_LOG_LEVEL: "warn",
    }),
  );
  const stored = dms.services.db.prepare<[], { n: number }>("SELECT max(id) AS n FROM observations");
  try {
    return await phase(`mqtt://127.0.0.1:${dms.services.deviceBridge!.port}`, () => stored.get()!.n ?? 0);
  } finally {
    await dms.close();
  }
}

export async function benchIngest(): Promise<{ mosquitto: number; dms: number; ratio: number }> {
  const load = loadavg()[0]!.toFixed(1);
  console.log(`bench/fleet ingest: ${DEVICES} devices, QoS 1, one in flight each, ${SECONDS} s per side`);
  console.log("Mosquitto → one subscriber:");
  const mosquitto = await mosquittoRate();
  console.log("dms embedded broker → stored and evaluated:");
  const dms = await dmsRate();
  const ratio = dms / mosquitto;
  const machine = `${cpus().length} cores (${cpus()[0]?.model ?? "?"}), load ${load} at start; devices in ${CHILDREN} child processes, broker and dms each one Node/C process on the same cores`;
  console.log(`mosquitto ${Math.round(mosquitto)}/s, dms ${Math.round(dms)}/s, ratio ${ratio.toFixed(2)}\n${machine}`);
  writeSection(
    "fleet-ingest",
    `## bench/fleet ingest (${new Date().toISOString().slice(0, 10)})

\`npx tsx bench/fleet/ingest.ts ${DEVICES} ${SECONDS}\` — ${DEVICES} devices publishing QoS 1 observations, one in flight each,
from ${CHILDREN} child processes; the same clients against Mosquitto (one plain subscriber counting) and against dms's embedded
broker (observations stored and evaluated, PUBACK after the group commit), same run.

| side | observations/s |
| --- | ---: |
| Mosquitto → 1 subscriber | ${Math.round(mosquitto)} |
| dms embedded broker, stored + evaluated | ${Math.round(dms)} |
| **ratio dms / Mosquitto** | **${ratio.toFixed(2)}** (target ≥ 0.8) |

Machine: ${machine}.`,
  );
  return { mosquitto, dms, ratio };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  benchIngest().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
