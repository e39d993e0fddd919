import { createServer, type Server, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { LARGE_READ, ReadBufferPool, SocketReader, type ChunkReceiver } from "../../src/proxy/socket-reader.js";
import { open, waitFor } from "./support.js";

const MiB = 1024 * 1024;
const servers: Server[] = [];

afterEach(() => {
  for (const server of servers.splice(0)) server.close();
});

/** A connected pair: the sender's socket and the accepted socket as a SocketReader. */
async function pair(pauseOnConnect: boolean, pool: ReadBufferPool): Promise<{ sender: Socket; reader: SocketReader }> {
  let server: Server | undefined;
  const accepted = new Promise<Socket>((resolve) => {
    server = createServer({ pauseOnConnect }, resolve);
  });
  servers.push(server!);
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  const sender = await open((server!.address() as { port: number }).port);
  return { sender, reader: SocketReader.adopt(await accepted, pool) };
}

/** Collects what the reader delivers, releasing each chunk at once. */
function collect(reader: SocketReader): { bytes: () => number; text: () => string } {
  const chunks: Buffer[] = [];
  const receiver: ChunkReceiver = (chunk, release) => {
    chunks.push(Buffer.from(chunk));
    release();
  };
  reader.receive(receiver);
  return { bytes: () => chunks.reduce((n, c) => n + c.length, 0), text: () => Buffer.concat(chunks).toString() };
}

describe("SocketReader", () => {
  it("reads a connection accepted with pauseOnConnect into pooled buffers, large while streaming", async () => {
    const pool = new ReadBufferPool();
    const { sender, reader } = await pair(true, pool);
    expect(reader.pooled).toBe(true);
    let largest = 0;
    let received = 0;
    reader.receive((chunk, release) => {
      largest = Math.max(largest, chunk.length);
      received += chunk.length;
      release();
    });
    const closed = new Promise((resolve) => reader.socket.once("close", resolve));
    reader.resume();
    sender.end(Buffer.alloc(8 * MiB, 7));
    await waitFor(
      () => received === 8 * MiB,
      () => `received ${received}`,
    );
    expect(largest).toBeGreaterThan(64 * 1024);
    expect(largest).toBeLessThanOrEqual(LARGE_READ);
    await closed;
    // Every large buffer went back: the one read into last, and those released by the receiver.
    expect(pool.stats.largeInUse).toBe(0);
  });

  it("falls back to 'data' events for a socket that is already reading, with the same behaviour", async () => {
    const { sender, reader } = await pair(false, new ReadBufferPool());
    expect(reader.pooled).toBe(false);
    const got = collect(reader);
    sender.write("held until resumed");
    await new Promise((r) => setTimeout(r, 50));
    expect(got.text()).toBe("");
    reader.resume();
    await waitFor(
      () => got.text() === "held until resumed",
      () => got.text(),
    );
  });

  for (const pauseOnConnect of [true, false]) {
    it(`hands over unshifted bytes first and notices a close while paused (pooled: ${pauseOnConnect})`, async () => {
      const { sender, reader } = await pair(pauseOnConnect, new ReadBufferPool());
      const got = collect(reader);
      reader.unshift(Buffer.from("first "));
      sender.write("second");
      sender.end();
      await new Promise((r) => setTimeout(r, 50));
      expect(got.text()).toBe("");
      reader.resume();
      await waitFor(
        () => got.text() === "first second",
        () => got.text(),
      );
      // Nothing forwarded, yet the peer's close is seen: the paused reader reads one chunk ahead.
      const lone = await pair(pauseOnConnect, new ReadBufferPool());
      const closed = new Promise((resolve) => lone.reader.socket.once("close", resolve));
      lone.sender.destroy();
      await closed;
    });
  }

  it("stops reading while paused with a chunk held, so the sender meets backpressure", async () => {
    const { sender, reader } = await pair(true, new ReadBufferPool());
    const got = collect(reader);
    let written = 0;
    const chunk = Buffer.alloc(256 * 1024);
    while (sender.write(chunk) && written < 256 * MiB) written += chunk.length;
    await new Promise((r) => setTimeout(r, 100));
    expect(got.bytes()).toBe(0);
    expect(sender.writableNeedDrain).toBe(true);
    sender.destroy();
  });
});
