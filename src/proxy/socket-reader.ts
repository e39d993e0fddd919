import { Socket, type OnReadOpts } from "node:net";

const KiB = 1024;
/** Node's own read size; a socket reads into one of these until its reads come in large. */
export const SMALL_READ = 64 * KiB;
/**
 * A busy socket reads up to this much per call: 4 times fewer reads, callbacks
 * and writes than Node's 64 KiB. Measured against 1 MiB and 4 MiB under
 * bench/proxy, 256 KiB used the least CPU (buffers that stay in cache, likely).
 */
export const LARGE_READ = 256 * KiB;

/**
 * Receives the bytes of one read. `chunk` lives in a shared buffer: call
 * `release` once it is no longer needed (after the write that forwards it has
 * completed, or at once when it is dropped), exactly like `write`'s callback.
 */
export type ChunkReceiver = (chunk: Buffer, release: () => void) => void;

/**
 * Read buffers shared by every socket of the process. Recycling is the point:
 * Node's default reads land in a freshly allocated 64 KiB buffer each time, and
 * the kernel's copy into it page-faults every 4 KiB (a third of the proxy's CPU
 * in the profile, see docs/proxy.md). Large buffers are a bounded budget so
 * that many busy sessions cannot hold a megabyte each; past it a socket reads
 * into small ones, as Node would. Free buffers kept for reuse are bounded too.
 */
export class ReadBufferPool {
  private readonly freeSmall: Buffer[] = [];
  private readonly freeLarge: Buffer[] = [];
  private largeInUse = 0;

  constructor(private readonly limits = { largeInUse: 64, freeLarge: 8, freeSmall: 64 }) {}

  /** A buffer for the next read; large only if wanted and the budget allows. */
  take(wantLarge: boolean): Buffer {
    if (wantLarge && this.largeInUse < this.limits.largeInUse) {
      this.largeInUse++;
      return this.freeLarge.pop() ?? Buffer.allocUnsafeSlow(LARGE_READ);
    }
    return this.freeSmall.pop() ?? Buffer.allocUnsafeSlow(SMALL_READ);
  }

  give(buffer: Buffer): void {
    if (buffer.length === LARGE_READ) {
      this.largeInUse--;
      if (this.freeLarge.length < this.limits.freeLarge) this.freeLarge.push(buffer);
    } else if (this.freeSmall.length < this.limits.freeSmall) {
      this.freeSmall.push(buffer);
    }
  }

  /** For tests and diagnostics. */
  get stats(): { largeInUse: number; freeLarge: number; freeSmall: number } {
    return { largeInUse: this.largeInUse, freeLarge: this.freeLarge.length, freeSmall: this.freeSmall.length };
  }
}

export const sharedReadBuffers = new ReadBufferPool();

/**
 * The reading side of an accepted connection: where its bytes go (`receive`),
 * whether they go there now (`pause`/`resume`), and bytes to hand over before
 * any others (`unshift`). Writing, ending and events stay on `socket`.
 *
 * Paused, it still reads one chunk ahead and holds it, as Node's own paused
 * sockets read up to their high-water mark: that is how a peer that closes is
 * noticed while nothing is forwarded. Reading stops while anything is held, so
 * the peer's close (which follows its data) is only seen once that is handed on.
 *
 * Made by `adopt` from a socket accepted with `pauseOnConnect`: reads then land
 * in pooled buffers of up to 256 KiB (`pooled`); any other socket is read the
 * ordinary way, through 'data' events, with the same behaviour.
 */
export class SocketReader {
  readonly socket: Socket;
  readonly pooled: boolean;
  private receiver: ChunkReceiver = drop;
  private readonly held: { chunk: Buffer; release: () => void }[] = [];
  private paused = true;
  /** The pooled buffer the next read lands in. */
  private target: Buffer | undefined;
  private lastReadFilled = false;

  private constructor(accepted: Socket, pool: ReadBufferPool) {
    const moved = moveToOnreadSocket(accepted, this.onreadOptions(pool));
    this.socket = moved ?? accepted;
    this.pooled = moved !== undefined;
    if (!moved) this.socket.on("data", (chunk: Buffer) => this.take(chunk, noop));
    // Closed, the connection reads no more: what it holds goes back.
    this.socket.once("close", () => this.letGo(pool));
    this.readAhead();
  }

  static adopt(accepted: Socket, pool: ReadBufferPool = sharedReadBuffers): SocketReader {
    return new SocketReader(accepted, pool);
  }

  receive(receiver: ChunkReceiver): void {
    this.receiver = receiver;
  }

  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
    while (!this.paused && this.held.length > 0) {
      const { chunk, release } = this.held.shift()!;
      this.receiver(chunk, release);
    }
    this.readAhead();
  }

  /** Bytes already read (and owned by the caller) that go out before any others. */
  unshift(bytes: Buffer): void {
    this.held.unshift({ chunk: bytes, release: noop });
    this.socket.pause();
  }

  /** One read's bytes: to the receiver, or held while paused. Answers whether to read on. */
  private take(chunk: Buffer, release: () => void): boolean {
    if (this.paused) this.held.push({ chunk, release });
    else this.receiver(chunk, release);
    if (this.held.length === 0) return true;
    this.socket.pause();
    return false;
  }

  private readAhead(): void {
    if (this.held.length === 0) this.socket.resume();
  }

  private onreadOptions(pool: ReadBufferPool): OnReadOpts {
    return {
      // Node asks for the next buffer after each read (and once at the start).
      buffer: () => {
        this.target = pool.take(this.lastReadFilled);
        return this.target;
      },
      callback: (bytes, buffer) => {
        const filled = buffer as Buffer;
        // A full buffer means more is likely waiting: read the next one large.
        this.lastReadFilled = bytes === filled.length;
        return this.take(filled.subarray(0, bytes), releaseOnce(pool, filled));
      },
    };
  }

  private letGo(pool: ReadBufferPool): void {
    for (const { release } of this.held.splice(0)) release();
    if (this.target) pool.give(this.target);
    this.target = undefined;
  }
}

/** Drops a chunk: what a receiver does when nobody is there to take it. */
export function drop(_chunk: Buffer, release: () => void): void {
  release();
}

function noop(): void {}

function releaseOnce(pool: ReadBufferPool, buffer: Buffer): () => void {
  let released = false;
  return () => {
    if (released) return;
    released = true;
    pool.give(buffer);
  };
}

/** The parts of Node's TCP handle (`TCPWrap`) that an onread Socket relies on. */
interface TcpHandle {
  reading: boolean;
  readStart(): number;
  readStop(): number;
  useUserBuffer(buffer: Uint8Array): void;
}

function isIdleTcpHandle(handle: unknown): handle is TcpHandle {
  if (typeof handle !== "object" || handle === null) return false;
  const h = handle as Partial<Record<keyof TcpHandle, unknown>>;
  return (
    h.reading === false &&
    typeof h.readStart === "function" &&
    typeof h.readStop === "function" &&
    typeof h.useUserBuffer === "function"
  );
}

/**
 * The one place that touches Node internals. net.Server has no `onread`
 * option for the sockets it accepts (its `onconnection` in lib/net.js builds
 * them), and only `onread` lets a read land in a buffer of our choosing, larger
 * than Node's fixed 64 KiB and recycled. So the accepted connection's handle
 * (`_handle`) moves into a new Socket made with `onread`; the old Socket lets
 * go of it and is destroyed when the new one closes, which keeps the server's
 * connection count (and so `server.close()`'s callback) right.
 *
 * Undefined, and the socket left as it was, unless it is a fresh TCP
 * connection that has not read yet (accepted with `pauseOnConnect`).
 */
function moveToOnreadSocket(accepted: Socket, onread: OnReadOpts): Socket | undefined {
  const internals = accepted as unknown as { _handle: unknown };
  const handle = internals._handle;
  if (!isIdleTcpHandle(handle) || accepted.destroyed || accepted.readableLength > 0) return undefined;
  const options = { handle, onread, allowHalfOpen: accepted.allowHalfOpen };
  let socket: Socket;
  try {
    socket = new Socket(options as ConstructorParameters<typeof Socket>[0]);
  } catch {
    // The handle may be half moved: drop the connection rather than read it in an unknown state.
    accepted.destroy();
    return undefined;
  }
  internals._handle = null;
  socket.once("close", () => accepted.destroy());
  return socket;
}
