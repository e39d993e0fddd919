import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { authentication } from "../../src/auth/index.js";
import { createProxy, type Proxy } from "../../src/proxy/index.js";
import { startTestDms, type TestDms } from "../support/dms.js";
import { Received, device, freePortRange, open, waitFor } from "./support.js";

let t: TestDms;
let proxy: Proxy;
beforeAll(async () => {
  t = await startTestDms();
  // A short serial deadline stands in for the interface's 10 s.
  const services = t.dms.services;
  proxy = createProxy(
    { ...services, things: services.registry, authentication: authentication(services) },
    {
      serialTimeoutMs: 200,
      devicePort: 0,
      controlPort: 0,
      ports: await freePortRange(2),
    },
  );
  await proxy.start();
});
afterAll(async () => {
  await proxy.stop();
  await t.close();
});

describe("device side", () => {
  it("closes a connection that sends no serial line in time, without answering", async () => {
    const silent = new Received(await open(proxy.devicePort));
    silent.socket.write("SN1 but no carriage return");
    await silent.untilClosed();
    expect(silent.text).toBe("");
    expect(proxy.sessions.deviceCount).toBe(0);
  });

  it("closes a connection whose serial line is over 128 bytes", async () => {
    const long = new Received(await open(proxy.devicePort));
    long.socket.write("x".repeat(129));
    await long.untilClosed();
    expect(long.text).toBe("");
  });

  it("accepts a serial line of exactly 128 bytes, split over several packets", async () => {
    const serial = "s".repeat(128);
    const s = await open(proxy.devicePort);
    s.setNoDelay(true);
    s.write(serial.slice(0, 60));
    await new Promise((r) => setTimeout(r, 20));
    s.write(`${serial.slice(60)}\r`);
    await waitFor(
      () => proxy.sessions.status(serial)?.device_connected === true,
      () => "device not registered",
    );
    s.destroy();
    await waitFor(
      () => proxy.sessions.status(serial) === undefined,
      () => "device still registered",
    );
  });

  it("sends nothing back to the device on its serial line", async () => {
    const dev = new Received(await device(proxy.devicePort, "SN1"));
    await waitFor(
      () => proxy.sessions.status("SN1")?.device_connected === true,
      () => "device not registered",
    );
    await new Promise((r) => setTimeout(r, 300)); // past the serial deadline: it must stay open
    expect(dev.text).toBe("");
    expect(dev.closed).toBe(false);
    dev.socket.destroy();
  });
});
