import { serve, type ServerType } from "@hono/node-server";
import type { Server as HttpServer } from "node:http";
import { createServer, type AddressInfo, type Server, type Socket } from "node:net";
import { Counter, Gauge } from "prom-client";
import type { Config } from "../config/index.js";
import { answerMalformedRequests } from "../errors/index.js";
import type { Logger, Metrics } from "../observability/index.js";
import { createControlApp, type ControlDeps } from "./control.js";
import { readSerialLine } from "./serial-line.js";
import { SessionManager, type PortRange } from "./sessions.js";
import { SocketReader } from "./socket-reader.js";

export interface ProxyOptions {
  /** The device's serial line must arrive within this (interface: 10 s). */
  serialTimeoutMs?: number;
  /** Longest serial line in bytes (interface: 128). */
  serialMaxBytes?: number;
  /** Overrides of the configuration, for tests and benchmarks. */
  devicePort?: number;
  controlPort?: number;
  ports?: PortRange;
}

/** What the proxy depends on; the wiring (src/service.ts) hands each in. */
export interface ProxyDeps extends ControlDeps {
  config: Pick<
    Config,
    "DMS_PROXY_PORTS" | "DMS_PROXY_DEVICE_PORT" | "DMS_PROXY_CONTROL_PORT" | "DMS_PROXY_HOST" | "DMS_HTTP_HOST"
  >;
  logger: Logger;
  metrics: Metrics;
}

/** The proxy as a component of the service, with the ports it actually bound. */
export interface Proxy {
  readonly name: "proxy";
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Bound ports, known once started (configuration may say 0). */
  readonly devicePort: number;
  readonly controlPort: number;
  readonly sessions: SessionManager;
}

/**
 * The device listener, the session manager with its client port range, and
 * the control HTTP server. Device and client listeners bind every interface
 * (IPv4 and IPv6) since devices and clients come from outside; the control
 * interface binds `DMS_HTTP_HOST` like REST.
 */
export function createProxy(deps: ProxyDeps, options: ProxyOptions = {}): Proxy {
  const { config, logger } = deps;
  const log = logger.child({ component: "proxy" });
  const sessions = new SessionManager(options.ports ?? config.DMS_PROXY_PORTS, log, undefined);
  const lineOptions = { maxBytes: options.serialMaxBytes ?? 128, timeoutMs: options.serialTimeoutMs ?? 10_000 };
  let deviceServer: Server | undefined;
  let controlServer: ServerType | undefined;
  let devicePort = 0;
  let controlPort = 0;

  registerMetrics(deps.metrics, sessions);

  const onDevice = (accepted: Socket): void => {
    const device = SocketReader.adopt(accepted);
    device.socket.setKeepAlive(true, 30_000);
    readSerialLine(
      device,
      lineOptions,
      (serial) => sessions.deviceConnected(serial, device),
      (why) => log.info({ remoteAddress: device.socket.remoteAddress, why }, "proxy device connection closed"),
    );
  };

  return {
    name: "proxy",
    get devicePort() {
      return devicePort;
    },
    get controlPort() {
      return controlPort;
    },
    sessions,
    async start() {
      // Paused, unread connections let SocketReader give them pooled read buffers.
      deviceServer = createServer({ pauseOnConnect: true }, onDevice);
      await new Promise<void>((resolve, reject) => {
        deviceServer!.once("error", reject);
        deviceServer!.listen({ port: options.devicePort ?? config.DMS_PROXY_DEVICE_PORT }, () => resolve());
      });
      devicePort = (deviceServer.address() as AddressInfo).port;
      const app = createControlApp({ ...deps, logger: log }, sessions, config.DMS_PROXY_HOST);
      controlServer = await new Promise<ServerType>((resolve, reject) => {
        const port = options.controlPort ?? config.DMS_PROXY_CONTROL_PORT;
        const server = serve({ fetch: app.fetch, hostname: config.DMS_HTTP_HOST, port }, () => resolve(server));
        answerMalformedRequests(server as HttpServer);
        server.once("error", reject);
      });
      controlPort = (controlServer.address() as AddressInfo).port;
      log.info({ devicePort, controlPort, ports: sessions.range }, "proxy listening");
    },
    async stop() {
      sessions.close();
      await Promise.all([close(deviceServer), close(controlServer)]);
    },
  };
}

function close(server: Server | ServerType | undefined): Promise<void> {
  if (!server?.listening) return Promise.resolve();
  return new Promise((resolve) => server.close(() => resolve()));
}

function registerMetrics(metrics: Metrics, sessions: SessionManager): void {
  const registers = [metrics.registry];
  new Gauge({
    name: "dms_proxy_sessions",
    help: "Proxy sessions started or running",
    registers,
    collect() {
      this.set(sessions.sessionCount);
    },
  });
  new Gauge({
    name: "dms_proxy_devices_connected",
    help: "Devices connected to the proxy device port",
    registers,
    collect() {
      this.set(sessions.deviceCount);
    },
  });
  // Read at scrape time so the byte pipe itself never touches a metric.
  let reported = 0;
  new Counter({
    name: "dms_proxy_transferred_bytes_total",
    help: "Payload bytes moved through proxy sessions, both directions",
    registers,
    collect() {
      const total = sessions.transferred;
      this.inc(total - reported);
      reported = total;
    },
  });
}
