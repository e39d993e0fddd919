import { describe, expect, it } from "vitest";
import { json } from "../support/http.js";
import { Received, device, open, refusedOrClosed, sleep, useProxyDms, waitFor } from "./support.js";

const t = useProxyDms(8);

describe("proxy session flow", () => {
  it("device connects, /on gives host and port, a client connects, bytes flow both ways and are counted", async () => {
    const dev = new Received(await device(t.devicePort, "SN1"));
    await t.deviceSeen("SN1");
    expect(await t.status("SN1")).toEqual({ device_connected: true, client_connected: false, transferred: 0 });

    const { host, port } = await t.on({ serial: "SN1" });
    expect(host).toBe("127.0.0.1");
    expect(port).toBeGreaterThanOrEqual(t.range.first);
    expect(port).toBeLessThanOrEqual(t.range.last);
    expect(await t.status("SN1")).toEqual({ device_connected: true, client_connected: false, transferred: 0 });

    const client = new Received(await open(port, host));
    await waitFor(
      async () => (await t.status("SN1")).client_connected,
      () => "client not seen",
    );
    client.socket.write("hello device");
    await dev.until("hello device");
    dev.socket.write("hi client!");
    await client.until("hi client!");
    expect(await t.status("SN1")).toEqual({ device_connected: true, client_connected: true, transferred: 22 });

    expect((await t.off("SN1")).status).toBe(200);
    await client.untilClosed();
    await dev.untilClosed();
  });

  it("keeps the bytes that follow the serial in the same packet for the client", async () => {
    const dev = new Received(await device(t.devicePort, "SN2", "early bytes"));
    await t.deviceSeen("SN2");
    const { port } = await t.on({ serial: "SN2" });
    const client = new Received(await open(port));
    await client.until("early bytes");
    expect((await t.status("SN2")).transferred).toBe(11);
    await t.off("SN2");
    await dev.untilClosed();
  });

  it("pairs a device that connects after /on, and what the client sent before it is delivered", async () => {
    const { port } = await t.on({ serial: "SN-E1" });
    const client = new Received(await open(port));
    client.socket.write("waiting for you");
    await sleep(50);
    expect(await t.status("SN-E1")).toEqual({ device_connected: false, client_connected: true, transferred: 0 });
    const dev = new Received(await device(t.devicePort, "SN-E1"));
    await dev.until("waiting for you");
    expect(await t.status("SN-E1")).toEqual({ device_connected: true, client_connected: true, transferred: 15 });
    await t.off("SN-E1");
    await client.untilClosed();
  });

  it("answers the current host and port when /on is repeated for a started session", async () => {
    const first = await t.on({ serial: "SN1", timeout: "30" });
    const again = await t.on({ serial: "SN1", persistent: "true" });
    expect(again).toEqual(first);
    await t.off("SN1");
  });

  it("stops a started session when timeout seconds pass with no client, closing the device and freeing the port", async () => {
    const dev = new Received(await device(t.devicePort, "SN1"));
    await t.deviceSeen("SN1");
    const { port } = await t.on({ serial: "SN1", timeout: "0.3" });
    await dev.untilClosed();
    expect((await t.control("/status", { serial: "SN1" })).status).toBe(404);
    expect(await refusedOrClosed(port)).toBe("ECONNREFUSED");
  });

  it("cancels the timeout once a client connects", async () => {
    const dev = new Received(await device(t.devicePort, "SN1"));
    await t.deviceSeen("SN1");
    const { port } = await t.on({ serial: "SN1", timeout: "0.3" });
    const client = new Received(await open(port));
    await sleep(500);
    dev.socket.write("still here");
    await client.until("still here");
    await t.off("SN1");
  });

  it("replaces the first device connection when a second one with the same serial arrives", async () => {
    const first = new Received(await device(t.devicePort, "SN2"));
    await t.deviceSeen("SN2");
    const { port } = await t.on({ serial: "SN2" });
    const client = new Received(await open(port));
    const second = new Received(await device(t.devicePort, "SN2", "from second"));
    await first.untilClosed();
    await client.until("from second");
    client.socket.write("to second");
    await second.until("to second");
    expect(client.closed).toBe(false);
    await t.off("SN2");
  });

  it("stops a session with /off during a transfer, closes both sides and frees the port", async () => {
    const dev = await device(t.devicePort, "SN1");
    await t.deviceSeen("SN1");
    const { port } = await t.on({ serial: "SN1" });
    const client = await open(port);
    let received = 0;
    client.on("data", (d: Buffer) => (received += d.length));
    const clientClosed = new Promise((r) => client.once("close", r));
    const deviceClosed = new Promise((r) => dev.once("close", r));
    dev.on("error", () => undefined);
    const chunk = Buffer.alloc(64 * 1024, 7);
    const pump = (): void => {
      while (!dev.destroyed && dev.write(chunk));
    };
    dev.on("drain", pump);
    pump();
    await waitFor(
      () => received > 1024 * 1024,
      () => `received ${received}`,
    );
    const res = await t.off("SN1");
    expect(res.status).toBe(200);
    expect((await json(res)).transferred).toBeGreaterThan(1024 * 1024);
    await Promise.all([clientClosed, deviceClosed]);
    expect((await t.control("/status", { serial: "SN1" })).status).toBe(404);
    expect(await refusedOrClosed(port)).toBe("ECONNREFUSED");
  });
});

describe("proxy metrics", () => {
  it("reports sessions, connected devices and transferred bytes on /metrics", async () => {
    const dev = new Received(await device(t.devicePort, "SN2"));
    await t.deviceSeen("SN2");
    const { port } = await t.on({ serial: "SN2" });
    const client = new Received(await open(port));
    client.socket.write("12345");
    await dev.until("12345");
    const text = await (await t.call("GET", "/metrics")).text();
    expect(text).toMatch(/^dms_proxy_sessions 1$/m);
    expect(text).toMatch(/^dms_proxy_devices_connected 1$/m);
    const total = Number(/^dms_proxy_transferred_bytes_total (\d+)$/m.exec(text)?.[1]);
    expect(total).toBeGreaterThanOrEqual(5);
    await t.off("SN2");
  });
});
