/**
 * Simulated devices for bench/jobs, run in a child process so that their
 * sockets and CPU are not the service's. Each device takes its next job
 * from `notify-next`, starts it with `start-next` and reports SUCCEEDED.
 * Messages from the parent: {cmd: "connect", url, names, password}, {cmd: "stop"}.
 */
import mqtt, { type MqttClient } from "mqtt";

interface ConnectCommand {
  cmd: "connect";
  url: string;
  names: string[];
  password: string;
}

const clients: MqttClient[] = [];
let notifications = 0;
let succeeded = 0;
/** Wall-clock ms of the last notification, comparable with the parent's Date.now(). */
let lastNotificationAt = 0;

function send(message: Record<string, unknown>): void {
  process.send?.(message);
}

async function connectOne(url: string, thingName: string, password: string): Promise<void> {
  const client = await mqtt.connectAsync(url, {
    clientId: thingName,
    username: thingName,
    password,
    reconnectPeriod: 0,
    connectTimeout: 60_000,
    keepalive: 600,
  });
  const base = `things/${thingName}/jobs`;
  client.on("message", (topic, payload) => {
    if (topic === `${base}/notify` || topic === `${base}/notify-next`) {
      notifications++;
      lastNotificationAt = Date.now();
    }
    const body = JSON.parse(payload.toString()) as {
      execution?: { jobId: string; status: string; versionNumber: number };
    };
    if (topic === `${base}/notify-next` && body.execution?.status === "QUEUED") {
      client.publish(`${base}/start-next`, "{}", { qos: 1 });
    } else if (topic === `${base}/start-next/accepted` && body.execution) {
      const { jobId, versionNumber } = body.execution;
      client.publish(
        `${base}/${jobId}/update`,
        JSON.stringify({ status: "SUCCEEDED", expectedVersion: versionNumber, statusDetails: { bench: "ok" } }),
        { qos: 1 },
      );
    } else if (topic.endsWith("/update/accepted")) {
      succeeded++;
    }
  });
  await client.subscribeAsync(
    [`${base}/notify-next`, `${base}/notify`, `${base}/start-next/accepted`, `${base}/+/update/accepted`],
    { qos: 1 },
  );
  clients.push(client);
}

async function connectAll(c: ConnectCommand): Promise<void> {
  const started = performance.now();
  const queue = [...c.names];
  // Bounded concurrency: a connect storm of thousands at once only measures the accept backlog.
  const workers = Array.from({ length: 100 }, async () => {
    for (let name = queue.shift(); name !== undefined; name = queue.shift()) await connectOne(c.url, name, c.password);
  });
  await Promise.all(workers);
  send({ cmd: "connected", count: clients.length, ms: performance.now() - started });
}

process.on("message", (m: { cmd: string }) => {
  if (m.cmd === "connect") {
    connectAll(m as ConnectCommand).catch((err: unknown) => {
      send({ cmd: "error", message: err instanceof Error ? err.message : String(err) });
    });
  } else if (m.cmd === "stats") {
    send({ cmd: "stats", notifications, succeeded, lastNotificationAt });
  } else if (m.cmd === "stop") {
    Promise.all(clients.map((client) => client.endAsync(true))).finally(() => process.exit(0));
  }
});
