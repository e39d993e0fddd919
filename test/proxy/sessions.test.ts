import { describe, expect, it } from "vitest";
import { Received, device, open, refusedOrClosed, sleep, useProxyDms, waitFor } from "./support.js";

const t = useProxyDms(8);

/** A running session: device and client connected and seen by the proxy. */
async function running(serial: string, query: Record<string, string> = {}) {
  const dev = new Received(await device(t.devicePort, serial));
  await t.deviceSeen(serial);
  const { port } = await t.on({ serial, ...query });
  const client = new Received(await open(port));
  await waitFor(
    async () => (await t.status(serial)).client_connected,
    () => "client not seen",
  );
  return { dev, client, port };
}

describe("non-persistent session (the default)", () => {
  it("stops when the client closes, disconnecting the device and freeing the port", async () => {
    const { dev, client, port } = await running("SN1");
    client.socket.end("last words");
    await dev.until("last words");
    await dev.untilClosed();
    expect((await t.control("/status", { serial: "SN1" })).status).toBe(404);
    expect(await refusedOrClosed(port)).toBe("ECONNREFUSED");
  });

  it("stops when the device closes, disconnecting the client after what the device sent", async () => {
    const { dev, client } = await running("SN1", { persistent: "false" });
    dev.socket.end("goodbye");
    await client.until("goodbye");
    await client.untilClosed();
    expect((await t.control("/status", { serial: "SN1" })).status).toBe(404);
  });
});

describe("persistent session", () => {
  it("keeps running when the client closes; the device's bytes meanwhile are discarded; a new client gets what follows", async () => {
    const { dev, client, port } = await running("SN1", { persistent: "true" });
    client.socket.destroy();
    await waitFor(
      async () => !(await t.status("SN1")).client_connected,
      () => "client still seen",
    );
    expect(dev.closed).toBe(false);
    dev.socket.write("nobody hears this");
    await sleep(100);
    const before = (await t.status("SN1")).transferred;
    expect(before).toBe(0);

    const next = new Received(await open(port));
    await waitFor(
      async () => (await t.status("SN1")).client_connected,
      () => "second client not seen",
    );
    dev.socket.write("fresh");
    await next.until("fresh");
    expect(await t.status("SN1")).toEqual({ device_connected: true, client_connected: true, transferred: 5 });
    await t.off("SN1");
    await next.untilClosed();
  });

  it("keeps running when the device closes; the client's bytes meanwhile are discarded; a reconnecting device resumes", async () => {
    const { dev, client } = await running("SN2", { persistent: "true" });
    dev.socket.destroy();
    await waitFor(
      async () => !(await t.status("SN2")).device_connected,
      () => "device still seen",
    );
    expect(client.closed).toBe(false);
    client.socket.write("into the void");
    await sleep(100);

    const again = new Received(await device(t.devicePort, "SN2"));
    await t.deviceSeen("SN2");
    client.socket.write("welcome back");
    await again.until("welcome back");
    again.socket.write("thanks");
    await client.until("thanks");
    expect((await t.status("SN2")).transferred).toBe(18);
    await t.off("SN2");
    await client.untilClosed();
  });

  it("a device closing before any client came leaves the session started, waiting for it", async () => {
    const dev = new Received(await device(t.devicePort, "SN-E1"));
    await t.deviceSeen("SN-E1");
    const { port } = await t.on({ serial: "SN-E1" });
    dev.socket.destroy();
    await waitFor(
      async () => !(await t.status("SN-E1")).device_connected,
      () => "device still seen",
    );
    const client = new Received(await open(port));
    const back = new Received(await device(t.devicePort, "SN-E1"));
    client.socket.write("ping");
    await back.until("ping");
    await t.off("SN-E1");
  });
});

describe("ip_whitelist", () => {
  it("refuses a client whose address is not listed, at accept, and the session stays started", async () => {
    const { port } = await t.on({ serial: "SN1", ip_whitelist: "::1,10.0.0.1" });
    expect(["closed", "ECONNRESET"]).toContain(await refusedOrClosed(port, "127.0.0.1"));
    expect(await t.status("SN1")).toEqual({ device_connected: false, client_connected: false, transferred: 0 });
    const v6 = await open(port, "::1");
    await waitFor(
      async () => (await t.status("SN1")).client_connected,
      () => "IPv6 client not admitted",
    );
    v6.destroy();
  });

  it("matches IPv4 clients of the dual-stack listener against IPv4 and ::ffff: mapped entries", async () => {
    for (const entry of ["127.0.0.1", "::ffff:127.0.0.1", "127.0.0.0/8"]) {
      const { port } = await t.on({ serial: "SN2", ip_whitelist: ` 192.0.2.7 , ${entry}` });
      const client = await open(port, "127.0.0.1");
      await waitFor(
        async () => (await t.status("SN2")).client_connected,
        () => `${entry}: client not admitted`,
      );
      client.destroy();
      await waitFor(
        async () => (await t.control("/status", { serial: "SN2" })).status === 404,
        () => "not stopped",
      );
    }
  });
});
