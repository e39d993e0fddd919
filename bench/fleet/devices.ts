/**
 * Device clients for bench/fleet's connect storm, one of several child
 * processes: each opens its share of the connections all at once with the
 * `mqtt` package, so that the clients are not what is measured.
 * Messages: {cmd: "prepare", url, devices: [{clientId, password?}]} → "prepared";
 * {cmd: "go"} → {cmd: "connected", startedAt, doneAt, connected, failed, retries, reasons}
 * (wall-clock ms, comparable across processes; `reasons`: why attempts failed, by error message),
 * and {cmd: "progress", connected, retries} every
 * few seconds meanwhile; {cmd: "close"} → "closed".
 */
import mqtt, { type MqttClient } from "mqtt";

interface Device {
  clientId: string;
  password?: string;
}

interface Stats {
  retries: number;
  reasons: Record<string, number>;
}

const PROGRESS_MS = 5000;
let url = "";
let devices: Device[] = [];
const clients: MqttClient[] = [];
const send = (message: Record<string, unknown>): void => {
  process.send?.(message);
};

/** Like a real device: a refused or dropped attempt is tried again, a few times. */
async function connect(device: Device, stats: Stats): Promise<boolean> {
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      const client = await mqtt.connectAsync(
        url,
        {
          clientId: device.clientId,
          ...(device.password ? { username: device.clientId, password: device.password } : {}),
          reconnectPeriod: 0,
          connectTimeout: 300_000,
          keepalive: 0,
          clean: true,
        },
        // A connection the broker closed before its CONNACK fails the attempt (then tried again);
        // without this mqtt.js waits on it for ever.
        false,
      );
      clients.push(client);
      return true;
    } catch (err) {
      stats.retries++;
      const reason = (err as Error).message;
      stats.reasons[reason] = (stats.reasons[reason] ?? 0) + 1;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  return false;
}

process.on("message", (m: { cmd: string; url?: string; devices?: Device[] }) => {
  if (m.cmd === "prepare") {
    url = m.url!;
    devices = m.devices!;
    send({ cmd: "prepared" });
  } else if (m.cmd === "go") {
    const stats: Stats = { retries: 0, reasons: {} };
    const startedAt = Date.now();
    // A storm under load takes minutes: how far it got, every few seconds.
    const ticker = setInterval(
      () => send({ cmd: "progress", connected: clients.length, retries: stats.retries }),
      PROGRESS_MS,
    );
    void Promise.all(devices.map((d) => connect(d, stats))).then((results) => {
      clearInterval(ticker);
      const connected = results.filter(Boolean).length;
      send({
        cmd: "connected",
        startedAt,
        doneAt: Date.now(),
        connected,
        failed: results.length - connected,
        ...stats,
      });
    });
  } else if (m.cmd === "close") {
    void Promise.all(clients.splice(0).map((c) => c.endAsync(true))).then(() => send({ cmd: "closed" }));
  }
});
