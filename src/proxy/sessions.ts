import { createServer, type Server } from "node:net";
import type { Logger } from "../observability/index.js";
import { ProxySession, type ProxyStatus, type SessionOptions, type StopReason } from "./session.js";
import type { SocketReader } from "./socket-reader.js";

export interface PortRange {
  first: number;
  last: number;
}

export type SessionRequest = Omit<SessionOptions, "port">;

/** Why `/on` could not start a session: every port of the range is taken. */
export class PortsExhausted extends Error {
  constructor(range: PortRange) {
    super(`No available proxy ports in ${range.first}-${range.last}`);
  }
}

/**
 * The sessions (one per serial), the devices connected now, and the client
 * port range. Devices and sessions live apart because either may come first:
 * a device that connects before `/on` waits, paused, for its session.
 */
export class SessionManager {
  private readonly sessions = new Map<string, ProxySession>();
  private readonly starting = new Map<string, Promise<ProxySession>>();
  private readonly devices = new Map<string, SocketReader>();
  private readonly used = new Set<number>();
  private next: number;
  /** Bytes of sessions that have stopped, for the metrics total. */
  private transferredByStopped = 0;

  constructor(
    readonly range: PortRange,
    private readonly logger: Logger,
    /** Where client listeners bind; undefined is every interface, IPv4 and IPv6. */
    private readonly host: string | undefined,
  ) {
    this.next = range.first;
  }

  get sessionCount(): number {
    return this.sessions.size;
  }

  get deviceCount(): number {
    return this.devices.size;
  }

  /** Payload bytes through all sessions, live and stopped. */
  get transferred(): number {
    let sum = this.transferredByStopped;
    for (const s of this.sessions.values()) sum += s.transferred;
    return sum;
  }

  session(serial: string): ProxySession | undefined {
    return this.sessions.get(serial);
  }

  /** Starts a session, or answers the one already started for this serial unchanged. */
  start(request: SessionRequest): Promise<ProxySession> {
    const existing = this.sessions.get(request.serial);
    if (existing) return Promise.resolve(existing);
    let pending = this.starting.get(request.serial);
    if (!pending) {
      pending = this.open(request).finally(() => this.starting.delete(request.serial));
      this.starting.set(request.serial, pending);
    }
    return pending;
  }

  /** Stops the session of `serial`; undefined when there is none. */
  stop(serial: string): ProxySession | undefined {
    const session = this.sessions.get(serial);
    session?.stop("off");
    return session;
  }

  /** The session's status; a connected device without a session is reported too. */
  status(serial: string): ProxyStatus | undefined {
    const session = this.sessions.get(serial);
    if (session) return session.status();
    if (this.liveDevice(serial)) return { device_connected: true, client_connected: false, transferred: 0 };
    return undefined;
  }

  /** A device has sent its serial line; a second connection with the same serial replaces the first. */
  deviceConnected(serial: string, device: SocketReader): void {
    const old = this.devices.get(serial);
    this.devices.set(serial, device);
    device.socket.once("close", () => {
      if (this.devices.get(serial) === device) this.devices.delete(serial);
    });
    const session = this.sessions.get(serial);
    if (session) session.attachDevice(device);
    else old?.socket.destroy();
    if (old) this.logger.info({ serial }, "proxy device connection replaced");
  }

  close(): void {
    for (const s of [...this.sessions.values()]) s.stop("shutdown");
    for (const d of this.devices.values()) d.socket.destroy();
    this.devices.clear();
  }

  private async open(request: SessionRequest): Promise<ProxySession> {
    const { port, server } = await this.listenOnFreePort();
    const session = new ProxySession({ ...request, port }, server, {
      stopped: (s, reason) => this.stopped(s, reason),
      refused: (s, remoteAddress, why) =>
        this.logger.info({ serial: s.serial, port: s.port, remoteAddress, why }, "proxy client refused"),
    });
    this.sessions.set(request.serial, session);
    const device = this.liveDevice(request.serial);
    if (device) session.attachDevice(device);
    this.logger.info({ serial: request.serial, port, persistent: request.persistent }, "proxy session started");
    return session;
  }

  /** The device's connection, unless a stopped session is closing it. */
  private liveDevice(serial: string): SocketReader | undefined {
    const device = this.devices.get(serial);
    return device && !device.socket.destroyed && !device.socket.writableEnded ? device : undefined;
  }

  private stopped(session: ProxySession, reason: StopReason): void {
    this.used.delete(session.port);
    this.transferredByStopped += session.transferred;
    if (this.sessions.get(session.serial) === session) this.sessions.delete(session.serial);
    this.logger.info(
      { serial: session.serial, port: session.port, reason, transferred: session.transferred },
      "proxy session stopped",
    );
  }

  /**
   * Tries the ports of the range round-robin from where the last search
   * stopped, skipping ours in use and any another process holds.
   */
  private async listenOnFreePort(): Promise<{ port: number; server: Server }> {
    const size = this.range.last - this.range.first + 1;
    for (let tried = 0; tried < size; tried++) {
      const port = this.next;
      this.next = port === this.range.last ? this.range.first : port + 1;
      if (this.used.has(port)) continue;
      this.used.add(port);
      const server = await listen(port, this.host);
      if (server) return { port, server };
      this.used.delete(port);
    }
    throw new PortsExhausted(this.range);
  }
}

/**
 * A listening server on `port`, or undefined when the port is taken. Its
 * connections arrive paused, unread, which lets SocketReader give them pooled
 * read buffers.
 */
function listen(port: number, host: string | undefined): Promise<Server | undefined> {
  return new Promise((resolve, reject) => {
    const server = createServer({ pauseOnConnect: true });
    const onError = (err: NodeJS.ErrnoException): void => {
      if (err.code === "EADDRINUSE" || err.code === "EACCES") resolve(undefined);
      else reject(err);
    };
    server.once("error", onError);
    server.listen({ port, host }, () => {
      server.off("error", onError);
      server.on("error", () => undefined);
      resolve(server);
    });
  });
}
