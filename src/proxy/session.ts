import type { Server, Socket } from "node:net";
import { drop, SocketReader, type ChunkReceiver } from "./socket-reader.js";
import { admits, type Whitelist } from "./whitelist.js";

/** The proxy session states of the interface; a session that is not listed is `none`. */
export type SessionState = "started" | "running" | "stopped";

export type StopReason = "off" | "timeout" | "device closed" | "client closed" | "shutdown";

export interface SessionOptions {
  serial: string;
  port: number;
  persistent: boolean;
  /** How long a started session waits for its first client. */
  timeoutMs: number;
  whitelist: Whitelist;
}

/** The body of `/status`. */
export interface ProxyStatus {
  device_connected: boolean;
  client_connected: boolean;
  transferred: number;
}

export interface SessionHooks {
  stopped(session: ProxySession, reason: StopReason): void;
  refused(session: ProxySession, remoteAddress: string | undefined, why: string): void;
}

/** A side closing a non-persistent session gets this long to flush what is still queued for it. */
const FLUSH_GRACE_MS = 5_000;

/**
 * One device, at most one client, and the byte pipe between them.
 *
 * Flow control is manual pause/resume rather than `pipe()` because the two
 * ends change under a persistent session (either side may leave and come
 * back) and every chunk is counted: a side reads only while its peer's socket
 * accepts more (`write()` true, or `drain`), so a slow reader slows the fast
 * writer down to TCP and memory stays at one read buffer in flight per
 * direction. Chunks are forwarded as read (up to 256 KiB, see SocketReader) and
 * their buffer goes back to the pool when the write has completed; counting
 * reads `length` and copies nothing.
 *
 * A lone side's bytes wait in its socket until the two sides have met once;
 * after that a persistent session reads and discards what a lone side sends,
 * as the interface's state table says.
 */
export class ProxySession {
  state: SessionState = "started";
  transferred = 0;
  private device: SocketReader | undefined;
  private client: SocketReader | undefined;
  private paired = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    readonly options: SessionOptions,
    private readonly server: Server,
    private readonly hooks: SessionHooks,
  ) {
    server.on("connection", this.onClient);
    this.timer = setTimeout(() => this.stop("timeout"), options.timeoutMs);
    this.timer.unref();
  }

  get serial(): string {
    return this.options.serial;
  }

  get port(): number {
    return this.options.port;
  }

  status(): ProxyStatus {
    return {
      device_connected: this.device !== undefined,
      client_connected: this.client !== undefined,
      transferred: this.transferred,
    };
  }

  /** The device's connection, new or replacing an earlier one of the same serial. */
  attachDevice(device: SocketReader): void {
    if (this.state === "stopped" || device === this.device) return;
    const old = this.device;
    this.device = device;
    this.listen(device, this.fromDevice, this.resumeClient);
    // The replaced connection's close must not count as "the device closed".
    old?.socket.destroy();
    this.flow();
  }

  stop(reason: StopReason): void {
    if (this.state === "stopped") return;
    this.state = "stopped";
    clearTimeout(this.timer);
    this.server.off("connection", this.onClient);
    this.server.close();
    const { device, client } = this;
    this.device = undefined;
    this.client = undefined;
    const graceful = reason === "device closed" || reason === "client closed";
    for (const side of [device, client]) if (side) finish(side, graceful);
    this.hooks.stopped(this, reason);
  }

  private readonly onClient = (socket: Socket): void => {
    if (!admits(this.options.whitelist, socket.remoteAddress)) {
      socket.destroy();
      this.hooks.refused(this, socket.remoteAddress, "not in ip_whitelist");
      return;
    }
    if (this.client !== undefined) {
      socket.destroy();
      this.hooks.refused(this, socket.remoteAddress, "a client is already connected");
      return;
    }
    clearTimeout(this.timer);
    this.state = "running";
    const client = SocketReader.adopt(socket);
    this.client = client;
    this.listen(client, this.fromClient, this.resumeDevice);
    this.flow();
  };

  private listen(side: SocketReader, onChunk: ChunkReceiver, onDrain: () => void): void {
    // Paused until flow() decides.
    side.pause();
    side.receive(onChunk);
    const { socket } = side;
    socket.setNoDelay(true);
    socket.on("drain", onDrain);
    socket.on("error", ignore);
    socket.once("close", () => this.detached(side));
  }

  private readonly fromDevice: ChunkReceiver = (chunk, release) =>
    this.forward(chunk, release, this.device, this.client);

  private readonly fromClient: ChunkReceiver = (chunk, release) =>
    this.forward(chunk, release, this.client, this.device);

  /** One read of `from` to `to`; `from` stops reading while `to` has more queued than it takes. */
  private forward(
    chunk: Buffer,
    release: () => void,
    from: SocketReader | undefined,
    to: SocketReader | undefined,
  ): void {
    if (to === undefined) return release(); // persistent and alone: discarded
    this.transferred += chunk.length;
    if (!to.socket.write(chunk, release)) from?.pause();
  }

  /** The device may read when the client takes more, or when it is alone and discarding. */
  private readonly resumeDevice = (): void => {
    if (this.device && this.mayRead(this.client)) this.device.resume();
  };

  private readonly resumeClient = (): void => {
    if (this.client && this.mayRead(this.device)) this.client.resume();
  };

  private mayRead(peer: SocketReader | undefined): boolean {
    if (peer) return !peer.socket.writableNeedDrain;
    return this.paired && this.options.persistent;
  }

  private flow(): void {
    if (this.device && this.client) this.paired = true;
    this.resumeDevice();
    this.resumeClient();
  }

  private detached(side: SocketReader): void {
    const wasClient = side === this.client;
    if (side === this.device) this.device = undefined;
    else if (wasClient) this.client = undefined;
    else return; // replaced, or already let go by stop()
    if (this.state !== "running") return; // a started session waits for its device to come back
    if (!this.options.persistent) {
      this.stop(wasClient ? "client closed" : "device closed");
      return;
    }
    this.flow();
  }
}

function ignore(): void {}

/** Ends a side; graceful lets queued bytes reach the peer first, within a grace period. */
function finish(side: SocketReader, graceful: boolean): void {
  const { socket } = side;
  if (!graceful) {
    socket.destroy();
    return;
  }
  // Read on (into the void) so the peer's FIN is seen and the socket closes.
  side.receive(drop);
  side.resume();
  socket.end();
  setTimeout(() => socket.destroy(), FLUSH_GRACE_MS).unref();
}
