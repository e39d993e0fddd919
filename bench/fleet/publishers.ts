/**
 * Device clients for bench/fleet/ingest.ts, in a child process so that their CPU is not the
 * broker's. Each device publishes QoS 1 observations with one in flight (the next after the
 * PUBACK) until told to stop. Messages: {cmd:"run", url, names, password}, {cmd:"stop"} → {sent}.
 */
import mqtt, { type MqttClient } from "mqtt";

let running = true;
let sent = 0;
const clients: MqttClient[] = [];

process.on("message", (m: { cmd: string; url?: string; names?: string[]; password?: string }) => {
  if (m.cmd === "stop") {
    running = false;
    void Promise.all(clients.map((c) => c.endAsync(true))).then(() => process.send?.({ sent }));
    return;
  }
  void run(m.url!, m.names!, m.password!);
});

async function run(url: string, names: string[], password: string): Promise<void> {
  for (let i = 0; i < names.length; i += 100) {
    const batch = await Promise.all(
      names
        .slice(i, i + 100)
        .map((name) =>
          mqtt.connectAsync(url, { clientId: name, username: name, password, reconnectPeriod: 0, keepalive: 600 }),
        ),
    );
    clients.push(...batch);
  }
  process.send?.({ connected: clients.length });
  await Promise.all(
    clients.map(async (c) => {
      const topic = `things/${c.options.clientId}/observations`;
      while (running) {
        await c.publishAsync(topic, JSON.stringify({ timestamp: Date.now(), state: { temp: 20 + (sent % 10) } }), {
          qos: 1,
        });
        sent++;
      }
    }),
  ).catch(() => {});
}
