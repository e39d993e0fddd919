/**
 * A dms in a process of its own for bench/fleet: the benchmark's clients and
 * bookkeeping never share its event loop. Environment: the dms configuration.
 * Reports {cmd: "listening", ms, url} when /healthz can answer, {cmd: "started",
 * ms, mqttPort, work} when /readyz turns 200 (ms since its own start), then
 * answers {cmd: "count"} with {cmd: "count", observations, cpuMs, connected}
 * (stored and evaluated; CPU time used; devices connected to the embedded broker)
 * and waits for {cmd: "stop"}.
 */
import { join } from "node:path";
import Database from "better-sqlite3";
import { loadConfig } from "../../src/config/index.js";
import { OBSERVATIONS_FILE } from "../../src/observations/index.js";
import { startDms } from "../../src/service.js";

const began = performance.now();
const send = (message: Record<string, unknown>): void => {
  process.send?.(message);
};

const config = loadConfig();
const dms = await startDms(config, {
  onListening: (url) => send({ cmd: "listening", ms: performance.now() - began, url }),
});
send({
  cmd: "started",
  ms: performance.now() - began,
  mqttPort: dms.services.deviceBridge?.port,
  ready: dms.services.readiness.status().ready,
  work: dms.services.registry.credentials.work,
});
// Observations stored and evaluated so far (the id sequence of the observation file only grows):
// what bench/fleet's ingest counts. Opened when first asked: with DMS_DATABASE_URL there is no such file.
let stored: Database.Statement<[], { n: number | null }> | undefined;
const observationsStored = (): number => {
  stored ??= new Database(join(config.DMS_DATA_DIR, OBSERVATIONS_FILE), { readonly: true }).prepare<
    [],
    { n: number | null }
  >("SELECT next - 1 AS n FROM observation_ids");
  return stored.get()?.n ?? 0;
};
process.on("message", (m: { cmd: string }) => {
  if (m.cmd === "count") {
    const { user, system } = process.cpuUsage();
    send({
      cmd: "count",
      observations: observationsStored(),
      cpuMs: (user + system) / 1000,
      connected: dms.services.deviceBridge?.connectedDevices ?? 0,
    });
  }
  if (m.cmd === "stop") {
    dms.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  }
});
