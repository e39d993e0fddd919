/**
 * bench/fleet, connect storm: N devices connect at once, spread over several
 * client processes, to the machine's Mosquitto (127.0.0.1:1883, anonymous)
 * and to dms's embedded broker (each device authenticated with its generated
 * secret), alternating within one run. The time is from the first client
 * process starting to connect to the last CONNACK, over all processes. Beside
 * it, the broker's CPU time per connection (which moves far less with the
 * shared machine's load than the time does), the connections the kernel
 * dropped at a full accept queue meanwhile, and why client attempts failed.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import mqtt from "mqtt";
import {
  child,
  listenOverflows,
  median,
  mosquittoCpuMs,
  progress,
  request,
  serviceEnv,
  stop,
  provisionDevices,
  secretOf,
  type SecretKind,
} from "./support.js";

const MOSQUITTO = "mqtt://127.0.0.1:1883";

interface Storm {
  broker: string;
  ms: number;
  connected: number;
  failed: number;
  retries: number;
  /** The broker's CPU time from the start of the storm to the last CONNACK. */
  cpuMs: number;
  /** Connections dropped at a full accept queue meanwhile (machine-wide). */
  overflows: number;
  reasons: Record<string, number>;
}

interface Connected {
  startedAt: number;
  doneAt: number;
  connected: number;
  failed: number;
  retries: number;
  reasons: Record<string, number>;
}

/** What a storm needs of its broker: its CPU time so far (ms), and a wait until it has let go of a storm's clients. */
interface Broker {
  cpuMs(): Promise<number>;
  settled(): Promise<void>;
}

type Device = { clientId: string; password?: string };

async function storm(
  broker: string,
  url: string,
  devices: Device[],
  clients: ReturnType<typeof child>[],
  target: Broker,
): Promise<Storm> {
  const share = Math.ceil(devices.length / clients.length);
  await Promise.all(
    clients.map((c, i) =>
      request(c, { cmd: "prepare", url, devices: devices.slice(i * share, (i + 1) * share) }, "prepared"),
    ),
  );
  // Each client process tells how far it got every few seconds (a finished one its total): the
  // storm's progress, summed over the last word of each.
  const sofar = new Map<(typeof clients)[number], { connected: number; retries: number }>();
  const onProgress = (c: (typeof clients)[number]) => (m: { cmd: string; connected: number; retries: number }) => {
    if (m.cmd === "progress" || m.cmd === "connected") sofar.set(c, m);
  };
  const ticker = setInterval(() => {
    const sum = (k: "connected" | "retries") => [...sofar.values()].reduce((a, p) => a + p[k], 0);
    progress(`${broker}: ${sum("connected")} of ${devices.length} connected so far (${sum("retries")} retries)`);
  }, 5000);
  const listeners = clients.map((c) => [c, onProgress(c)] as const);
  for (const [c, l] of listeners) c.on("message", l);
  const [cpuFrom, overflowsFrom] = [await target.cpuMs(), listenOverflows()];
  const results = await Promise.all(clients.map((c) => request<Connected>(c, { cmd: "go" }, "connected")));
  const [cpuTo, overflowsTo] = [await target.cpuMs(), listenOverflows()];
  clearInterval(ticker);
  for (const [c, l] of listeners) c.off("message", l);
  const ms = Math.max(...results.map((r) => r.doneAt)) - Math.min(...results.map((r) => r.startedAt));
  const total = (k: "connected" | "failed" | "retries") => results.reduce((a, r) => a + r[k], 0);
  const reasons: Record<string, number> = {};
  for (const [reason, n] of results.flatMap((r) => Object.entries(r.reasons)))
    reasons[reason] = (reasons[reason] ?? 0) + n;
  await Promise.all(clients.map((c) => request(c, { cmd: "close" }, "closed")));
  const result: Storm = {
    broker,
    ms,
    connected: total("connected"),
    failed: total("failed"),
    retries: total("retries"),
    cpuMs: cpuTo - cpuFrom,
    overflows: overflowsTo - overflowsFrom,
    reasons,
  };
  progress(
    `${broker}: ${result.connected} connected in ${(ms / 1000).toFixed(2)} s (${result.retries} retries, ${result.overflows} accept-queue overflows, ${(result.cpuMs / 1000).toFixed(1)} s broker CPU)`,
  );
  // The next storm meets a broker that has let go of this one's clients (sockets closed, sessions gone).
  await target.settled();
  return result;
}

async function refused(url: string, clientId: string, password: string): Promise<string> {
  return mqtt
    .connectAsync(url, { clientId, username: clientId, password, reconnectPeriod: 0, connectTimeout: 10_000 })
    .then(
      async (c) => {
        await c.endAsync(true);
        return "connected (WRONG)";
      },
      (e: Error) => e.message,
    );
}

export async function connectStormSection(
  count: number,
  processes: number,
  rounds: number,
  secrets: SecretKind,
): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), "dms-bench-storm-"));
  const things = provisionDevices(join(dir, "provision.json"), "storm", count, secrets);
  const service = child("service.ts", serviceEnv(join(dir, "data"), join(dir, "provision.json"), "api,mqtt"));
  const clients = Array.from({ length: processes }, () => child("devices.ts"));
  try {
    const { mqttPort } = await request<{ mqttPort: number }>(service, undefined, "started");
    const dmsUrl = `mqtt://127.0.0.1:${mqttPort}`;
    const status = () => request<{ cpuMs: number; connected: number }>(service, { cmd: "count" }, "count");
    const dms: Broker = {
      cpuMs: async () => (await status()).cpuMs,
      // Until the embedded broker has closed every session of the storm (a minute at most), then a breath.
      settled: async () => {
        for (let waited = 0; waited < 60_000 && (await status()).connected > 0; waited += 250) {
          await new Promise((r) => setTimeout(r, 250));
        }
        await new Promise((r) => setTimeout(r, 1000));
      },
    };
    // Mosquitto's sessions cannot be asked for here; it lets go of ten thousand within a second or two.
    const mosquitto: Broker = {
      cpuMs: async () => mosquittoCpuMs(),
      settled: () => new Promise((r) => setTimeout(r, 3000)),
    };
    progress(`dms ready, embedded broker on ${mqttPort}; ${count} devices over ${processes} client processes`);
    const authenticated: Device[] = things.map((t) => ({ clientId: t.thingName, password: t.secret }));
    const anonymous: Device[] = things.map((t) => ({ clientId: `m-${t.thingName}` }));
    const rows: Storm[] = [];
    for (let round = 1; round <= rounds; round++) {
      // Alternating which goes first, so that neither always meets a warmer or busier machine.
      const order = round % 2 ? ["mosquitto", "dms"] : ["dms", "mosquitto"];
      for (const which of order) {
        rows.push(
          which === "dms"
            ? await storm(
                `dms embedded (aedes), ${secrets} secrets, round ${round}`,
                dmsUrl,
                authenticated,
                clients,
                dms,
              )
            : await storm(
                `Mosquitto 127.0.0.1:1883, anonymous, round ${round}`,
                MOSQUITTO,
                anonymous,
                clients,
                mosquitto,
              ),
        );
      }
    }
    const wrong = await refused(dmsUrl, things[0]!.thingName, secretOf(secrets));
    return report(rows, count, processes, wrong);
  } finally {
    await Promise.all(clients.map((c) => (c.exitCode === null ? (c.kill(), undefined) : undefined)));
    await stop(service);
    rmSync(dir, { recursive: true, force: true });
  }
}

function report(rows: Storm[], count: number, processes: number, wrong: string): string {
  const ratios: number[] = [];
  const byRound = new Map<string, Storm[]>();
  for (const r of rows) {
    const round = r.broker.slice(r.broker.lastIndexOf("round"));
    byRound.set(round, [...(byRound.get(round) ?? []), r]);
  }
  for (const pair of byRound.values()) {
    const dms = pair.find((r) => r.broker.startsWith("dms"));
    const mosquitto = pair.find((r) => r.broker.startsWith("Mosquitto"));
    if (dms && mosquitto) ratios.push(dms.ms / mosquitto.ms);
  }
  return [
    `${count} devices, ${processes} client processes (mqtt.js, every connection opened at once), one dms process (roles api,mqtt); all of them and Mosquitto share the machine's cores with each other and with whatever else runs (see the load average). A wrong secret for one device after the storms: "${wrong}".`,
    "",
    "| broker | connected | failed | retries | all connected after (s) | connections/s | broker CPU µs/connection | accept-queue overflows |",
    "|---|---:|---:|---:|---:|---:|---:|---:|",
    ...rows.map(
      (r) =>
        `| ${r.broker} | ${r.connected} | ${r.failed} | ${r.retries} | ${(r.ms / 1000).toFixed(2)} | ${Math.round(r.connected / (r.ms / 1000)).toLocaleString("en")} | ${Math.round((r.cpuMs * 1000) / Math.max(1, r.connected))} | ${r.overflows} |`,
    ),
    "",
    "Accept-queue overflows are the kernel's count for the whole machine (TcpExt ListenOverflows) during the storm: each is a connect tried again by the client's TCP after 1, 3, 7, 15... s.",
    ...rows
      .filter((r) => r.retries > 0)
      .map(
        (r) =>
          `Retries of ${r.broker}: ${Object.entries(r.reasons)
            .map(([reason, n]) => `${n} × "${reason}"`)
            .join(", ")}.`,
      ),
    "",
    `Ratio dms (authenticated) / Mosquitto (anonymous), per round: ${ratios.map((x) => x.toFixed(2)).join(", ")}; median **${median(ratios).toFixed(2)}** (target ≤ 3).`,
  ].join("\n");
}
