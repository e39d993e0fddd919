import { drop, type SocketReader } from "./socket-reader.js";

const CR = 0x0d;

export interface SerialLineOptions {
  /** Longest serial accepted, in bytes, not counting the carriage return. */
  maxBytes: number;
  /** How long a new connection has to send its serial line. */
  timeoutMs: number;
}

/**
 * Reads the device's greeting, its serial followed by a carriage return, and
 * hands the connection on paused with whatever followed the serial in the same
 * read held back (`unshift`, copied out of the shared read buffer) so those
 * bytes reach the client like any other. A connection that is silent too
 * long, or whose line grows past `maxBytes`, is closed without a word: the
 * protocol has no answer.
 */
export function readSerialLine(
  device: SocketReader,
  options: SerialLineOptions,
  done: (serial: string) => void,
  refused: (why: string) => void,
): void {
  const { socket } = device;
  let pending: Buffer | undefined;
  const timer = setTimeout(() => close("no serial line in time"), options.timeoutMs);
  timer.unref();

  function close(why: string): void {
    clearTimeout(timer);
    socket.destroy();
    refused(why);
  }

  function onChunk(chunk: Buffer, release: () => void): void {
    // A copy, so the shared read buffer goes back at once; once per connection, at most a read's worth.
    const data = Buffer.concat(pending ? [pending, chunk] : [chunk]);
    release();
    const cr = data.indexOf(CR);
    if ((cr === -1 ? data.length : cr) > options.maxBytes) return close("serial line too long");
    if (cr === -1) {
      pending = data;
      return;
    }
    clearTimeout(timer);
    device.pause();
    device.receive(drop);
    socket.off("close", onClose);
    const serial = data.toString("utf8", 0, cr).trim();
    if (serial === "") return close("empty serial");
    if (cr + 1 < data.length) device.unshift(data.subarray(cr + 1));
    done(serial);
  }

  function onClose(): void {
    clearTimeout(timer);
  }

  device.receive(onChunk);
  socket.on("error", () => socket.destroy());
  socket.once("close", onClose);
  device.resume();
}
