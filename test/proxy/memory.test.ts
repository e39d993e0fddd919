import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { sharedReadBuffers } from "../../src/proxy/socket-reader.js";
import { json } from "../support/http.js";
import { device, open, useProxyDms, waitFor } from "./support.js";

const t = useProxyDms(2);

// Buffers read and forwarded are garbage at once; collecting before each sample measures what is held.
setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

const MiB = 1024 * 1024;
const TOTAL = 50 * MiB;
/** The reader takes about 40 MiB/s; loopback writes are many times faster. */
const READER_BYTES_PER_MS = 40 * 1024;

describe("backpressure", () => {
  it(
    "a slow reader slows the device down and keeps memory bounded over a 50 MiB transfer",
    { timeout: 60_000 },
    async () => {
      gc();
      const base = process.memoryUsage();
      let peakRss = base.rss;
      let peakBuffers = base.arrayBuffers;
      const sampler = setInterval(() => {
        gc();
        const m = process.memoryUsage();
        peakRss = Math.max(peakRss, m.rss);
        peakBuffers = Math.max(peakBuffers, m.arrayBuffers);
      }, 150);

      const dev = await device(t.devicePort, "SN1");
      await waitFor(
        async () => (await t.control("/status", { serial: "SN1" })).status === 200,
        () => "no device",
      );
      const { port } = await json(await t.control("/on", { serial: "SN1" }));
      const client = await open(port);

      let received = 0;
      const done = new Promise<void>((resolve) => {
        client.on("data", (chunk: Buffer) => {
          received += chunk.length;
          if (received >= TOTAL) return resolve();
          client.pause();
          setTimeout(() => client.resume(), chunk.length / READER_BYTES_PER_MS);
        });
      });

      // The device writes as fast as the proxy lets it, respecting write() === false.
      const chunk = Buffer.alloc(256 * 1024, 1);
      let written = 0;
      let receivedWhenWriterDone = 0;
      const writer = new Promise<void>((resolve) => {
        const pump = (): void => {
          while (written < TOTAL) {
            written += chunk.length;
            if (!dev.write(chunk)) return void dev.once("drain", pump);
          }
          receivedWhenWriterDone = received;
          resolve();
        };
        pump();
      });

      await Promise.all([writer, done]);
      clearInterval(sampler);
      const status = await json(await t.control("/status", { serial: "SN1" }));
      expect(status.transferred).toBe(TOTAL);
      // The writer could only finish once the reader had taken all but what socket buffers hold.
      expect(TOTAL - receivedWhenWriterDone).toBeLessThan(24 * MiB);
      expect(peakBuffers - base.arrayBuffers).toBeLessThan(16 * MiB);
      expect(peakRss - base.rss).toBeLessThan(64 * MiB);
      await t.off("SN1");
      // Both connections closed: every large read buffer is back in the shared budget.
      dev.destroy();
      client.destroy();
      await waitFor(
        () => sharedReadBuffers.stats.largeInUse === 0,
        () => `large read buffers still out: ${JSON.stringify(sharedReadBuffers.stats)}`,
      );
    },
  );
});
