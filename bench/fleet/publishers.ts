/**
 * Device clients for bench/fleet's ingest section, one of several child processes, so that their CPU
 * is not the broker's. Each device publishes QoS 1 observations with one in flight (the next after
 * the PUBACK) until told to stop.
 * Messages: {cmd: "run", url, devices: [{clientId, password?}]} → {cmd: "connected", connected};
 * {cmd: "count"} → {cmd: "count", acknowledged, cpuMs}; {cmd: "close"} → {cmd: "closed", acknowledged}.
 */
import mqtt, { type MqttClient } from "mqtt";

interface Device {
  clientId: string;
  password?: string;
}

let running = true;
let acknowledged = 0;
const clients: MqttClient[] = [];
const cpuMs = (): number => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};
const send = (message: Record<string, unknown>): void => {
  process.send?.(message);
};

process.on("message", (m: { cmd: string; url?: string; devices?: Device[] }) => {
  if (m.cmd === "run") void run(m.url!, m.devices!);
  else if (m.cmd === "count") send({ cmd: "count", acknowledged, cpuMs: cpuMs() });
  else if (m.cmd === "close") {
    running = false;
    void Promise.all(clients.splice(0).map((c) => c.endAsync(true))).then(() => send({ cmd: "closed", acknowledged }));
  }
});

async function run(url: string, devices: Device[]): Promise<void> {
  running = true;
  for (let i = 0; i < devices.length; i += 100) {
    const batch = await Promise.all(
      devices.slice(i, i + 100).map((d) =>
        mqtt.connectAsync(url, {
          clientId: d.clientId,
          ...(d.password ? { username: d.clientId, password: d.password } : {}),
          reconnectPeriod: 0,
          keepalive: 600,
          // A busy machine takes long to connect a thousand: waited for, as the connect storm does.
          connectTimeout: 300_000,
        }),
      ),
    );
    clients.push(...batch);
  }
  send({ cmd: "connected", connected: clients.length });
  await Promise.all(
    clients.map(async (c) => {
      const topic = `things/${c.options.clientId}/observations`;
      let n = 0;
      while (running) {
        await c.publishAsync(topic, JSON.stringify({ timestamp: Date.now(), state: { temp: 20 + (n++ % 10) } }), {
          qos: 1,
        });
        acknowledged++;
      }
    }),
  ).catch(() => {});
}
