/**
 * bench/fleet, MQTT ingest: N devices publishing QoS 1 observations, one in flight each, from
 * several client processes. Same clients, same run, the order rotated each round:
 *  - Mosquitto (127.0.0.1:1883) relaying to one plain subscriber, which counts;
 *  - dms's embedded broker (devices authenticated with `--secrets`' kind): observations stored and
 *    evaluated, each PUBACK after the group commit holding it;
 *  - dms reading Mosquitto through `MQTT_URL`: observations stored and evaluated.
 * Each dms is a process of its own (roles engine,mqtt, no Kafka), counted from its store. Beside
 * the rates, the CPU time each side spent per observation (clients, broker, subscriber or dms):
 * the rates move with the machine's other load, the CPU per observation much less.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import mqtt from "mqtt";
import {
  child,
  median,
  mosquittoCpuMs,
  progress,
  request,
  serviceEnv,
  stop,
  provisionDevices,
  type SecretKind,
} from "./support.js";

const MOSQUITTO = "mqtt://127.0.0.1:1883";
/** Seconds between all devices connected and the start of counting. */
const WARM_UP_S = 2;

type Device = { clientId: string; password?: string };
type Side = "mosquitto" | "dms embedded" | "dms via MQTT_URL";

/** A point in a phase: what was counted so far and the CPU time (ms) each party used so far. */
interface Reading {
  count: number;
  acknowledged: number;
  cpu: { clients: number; mosquitto: number; receiver: number };
}

interface Phase {
  side: Side;
  round: number;
  /** Counted where it ends: the subscriber's messages, or the observations dms stored and evaluated. */
  rate: number;
  /** PUBACKs the devices received, per second. */
  acknowledged: number;
  /** CPU µs per counted observation: the device clients, Mosquitto, the receiver (subscriber or dms). */
  cpuUs: Reading["cpu"];
}

/**
 * Runs the devices against `url` for `seconds` after all connected and a warm-up. `receiver` answers
 * what was counted and the receiver's CPU time (ms) so far; it is read each second.
 */
async function publish(
  label: string,
  url: string,
  devices: Device[],
  clients: ReturnType<typeof child>[],
  seconds: number,
  receiver: () => Promise<{ count: number; cpuMs: number }>,
): Promise<Omit<Phase, "side" | "round">> {
  const share = Math.ceil(devices.length / clients.length);
  await Promise.all(
    clients.map((c, i) =>
      request(c, { cmd: "run", url, devices: devices.slice(i * share, (i + 1) * share) }, "connected"),
    ),
  );
  const read = async (): Promise<Reading> => {
    const [counts, received] = await Promise.all([
      Promise.all(clients.map((c) => request<{ acknowledged: number; cpuMs: number }>(c, { cmd: "count" }, "count"))),
      receiver(),
    ]);
    return {
      count: received.count,
      acknowledged: counts.reduce((a, r) => a + r.acknowledged, 0),
      cpu: {
        clients: counts.reduce((a, r) => a + r.cpuMs, 0),
        mosquitto: mosquittoCpuMs(),
        receiver: received.cpuMs,
      },
    };
  };
  await new Promise((r) => setTimeout(r, WARM_UP_S * 1000));
  const from = await read();
  const t0 = performance.now();
  let last = from.count;
  for (let s = 1; s <= seconds; s++) {
    await new Promise((r) => setTimeout(r, t0 + s * 1000 - performance.now()));
    const { count } = await receiver();
    progress(`${label}: ${s}/${seconds} s, ${count - last}/s (mean ${Math.round((count - from.count) / s)}/s)`);
    last = count;
  }
  const to = await read();
  const elapsed = (performance.now() - t0) / 1000;
  await Promise.all(clients.map((c) => request(c, { cmd: "close" }, "closed")));
  const n = Math.max(1, to.count - from.count);
  const perObservation = (k: keyof Reading["cpu"]) => ((to.cpu[k] - from.cpu[k]) * 1000) / n;
  return {
    rate: (to.count - from.count) / elapsed,
    acknowledged: (to.acknowledged - from.acknowledged) / elapsed,
    cpuUs: {
      clients: perObservation("clients"),
      mosquitto: perObservation("mosquitto"),
      receiver: perObservation("receiver"),
    },
  };
}

async function mosquittoPhase(
  devices: Device[],
  clients: ReturnType<typeof child>[],
  seconds: number,
  round: number,
): Promise<Phase> {
  const sub = await mqtt.connectAsync(MOSQUITTO, { clientId: `bench-sub-${process.pid}`, reconnectPeriod: 0 });
  let received = 0;
  sub.on("message", () => received++);
  await sub.subscribeAsync("things/+/observations", { qos: 0 });
  // The subscriber runs in this process, which does little else meanwhile: its CPU is the subscriber's.
  const cpuMs = (): number => {
    const { user, system } = process.cpuUsage();
    return (user + system) / 1000;
  };
  try {
    const label = `Mosquitto → subscriber, round ${round}`;
    const r = await publish(label, MOSQUITTO, devices, clients, seconds, async () => ({
      count: received,
      cpuMs: cpuMs(),
    }));
    return { side: "mosquitto", round, ...r };
  } finally {
    await sub.endAsync(true);
  }
}

async function dmsPhase(
  side: Side,
  env: Record<string, string>,
  devices: Device[],
  clients: ReturnType<typeof child>[],
  seconds: number,
  round: number,
): Promise<Phase> {
  const service = child("service.ts", env);
  try {
    const { mqttPort } = await request<{ mqttPort: number }>(service, undefined, "started");
    const url = env.MQTT_URL ?? `mqtt://127.0.0.1:${mqttPort}`;
    const receiver = async () => {
      const r = await request<{ observations: number; cpuMs: number }>(service, { cmd: "count" }, "count");
      return { count: r.observations, cpuMs: r.cpuMs };
    };
    const r = await publish(`${side}, round ${round}`, url, devices, clients, seconds, receiver);
    return { side, round, ...r };
  } finally {
    await stop(service);
  }
}

export async function ingestSection(
  count: number,
  processes: number,
  seconds: number,
  rounds: number,
  secrets: SecretKind,
): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), "dms-bench-ingest-"));
  const things = provisionDevices(join(dir, "provision.json"), "ingest", count, secrets);
  const authenticated: Device[] = things.map((t) => ({ clientId: t.thingName, password: t.secret }));
  // Mosquitto takes anyone: the same things, without their secrets.
  const anonymous: Device[] = things.map((t) => ({ clientId: t.thingName }));
  const env = (name: string, extra: Record<string, string> = {}) => ({
    ...serviceEnv(mkdtempSync(join(dir, `${name}-`)), join(dir, "provision.json"), "engine,mqtt"),
    ...extra,
  });
  const clients = Array.from({ length: processes }, () => child("publishers.ts"));
  const phases: Phase[] = [];
  try {
    for (let round = 1; round <= rounds; round++) {
      const sides: (() => Promise<Phase>)[] = [
        () => mosquittoPhase(anonymous, clients, seconds, round),
        () => dmsPhase("dms embedded", env("embedded"), authenticated, clients, seconds, round),
        () =>
          dmsPhase("dms via MQTT_URL", env("external", { MQTT_URL: MOSQUITTO }), anonymous, clients, seconds, round),
      ];
      // Rotated each round, so that no side always meets a warmer or busier machine.
      for (let i = 0; i < sides.length; i++) phases.push(await sides[(i + round - 1) % sides.length]!());
    }
    return report(phases, count, processes, seconds);
  } finally {
    for (const c of clients) if (c.exitCode === null) c.kill();
    rmSync(dir, { recursive: true, force: true });
  }
}

function report(phases: Phase[], count: number, processes: number, seconds: number): string {
  const ratios = (side: Side): number[] =>
    phases
      .filter((p) => p.side === side)
      .map((p) => p.rate / phases.find((m) => m.side === "mosquitto" && m.round === p.round)!.rate);
  const line = (side: Side): string => {
    const r = ratios(side);
    return `- ${side} / Mosquitto's relay, per round: ${r.map((x) => x.toFixed(2)).join(", ")}; median **${median(r).toFixed(2)}** (target ≥ 0.8)`;
  };
  const us = (x: number): string => x.toFixed(0);
  return [
    `${count} devices publishing QoS 1 observations, one in flight each, from ${processes} client processes (mqtt.js), ${seconds} s counted per phase after a ${WARM_UP_S} s warm-up; each dms a process of its own (roles engine,mqtt, SQLite on the data dir, no Kafka). The clients, Mosquitto and dms share the machine's cores with each other and with whatever else runs (see the load average). "Rate" is what the subscriber received (Mosquitto) or what dms stored and evaluated; "acknowledged" the PUBACKs the devices got; CPU µs per observation of each party (the receiver: the subscriber, or dms).`,
    "",
    "| side | round | rate (observations/s) | acknowledged/s | CPU µs/obs: clients | Mosquitto | receiver |",
    "|---|---:|---:|---:|---:|---:|---:|",
    ...phases.map(
      (p) =>
        `| ${p.side} | ${p.round} | ${Math.round(p.rate).toLocaleString("en")} | ${Math.round(p.acknowledged).toLocaleString("en")} | ${us(p.cpuUs.clients)} | ${us(p.cpuUs.mosquitto)} | ${us(p.cpuUs.receiver)} |`,
    ),
    "",
    line("dms embedded"),
    line("dms via MQTT_URL"),
  ].join("\n");
}
