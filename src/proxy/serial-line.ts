import type { Socket } from "node:net";

const CR = 0x0d;

export interface SerialLineOptions {
  /** Longest serial accepted, in bytes, not counting the carriage return. */
  maxBytes: number;
  /** How long a new connection has to send its serial line. */
  timeoutMs: number;
}

/**
 * Reads the device's greeting, its serial followed by a carriage return, and
 * hands the socket on paused with whatever followed the serial in the same
 * packet pushed back (`unshift`) so those bytes reach the client like any
 * other. A connection that is silent too long, or whose line grows past
 * `maxBytes`, is closed without a word: the protocol has no answer.
 */
export function readSerialLine(
  socket: Socket,
  options: SerialLineOptions,
  done: (serial: string, socket: Socket) => void,
  refused: (why: string) => void,
): void {
  let pending: Buffer | undefined;
  const timer = setTimeout(() => close("no serial line in time"), options.timeoutMs);
  timer.unref();

  function close(why: string): void {
    clearTimeout(timer);
    socket.destroy();
    refused(why);
  }

  function onData(chunk: Buffer): void {
    const data = pending ? Buffer.concat([pending, chunk]) : chunk;
    const cr = data.indexOf(CR);
    if ((cr === -1 ? data.length : cr) > options.maxBytes) return close("serial line too long");
    if (cr === -1) {
      pending = data;
      return;
    }
    clearTimeout(timer);
    socket.pause();
    socket.off("data", onData);
    socket.off("close", onClose);
    const serial = data.toString("utf8", 0, cr).trim();
    if (serial === "") return close("empty serial");
    if (cr + 1 < data.length) socket.unshift(data.subarray(cr + 1));
    done(serial, socket);
  }

  function onClose(): void {
    clearTimeout(timer);
  }

  socket.on("data", onData);
  socket.on("error", () => socket.destroy());
  socket.once("close", onClose);
}
