import { describe, expect, it } from "vitest";
import { json } from "../support/http.js";
import { startTestDms } from "../support/dms.js";
import { Received, device, open, tokenOf, useProxyDms } from "./support.js";

const t = useProxyDms(2);

describe("proxy control: availability and not found", () => {
  it("answers 503 with a message when the two ports of the range are taken, and serves again after /off", async () => {
    expect((await t.control("/on", { serial: "SN1" })).status).toBe(200);
    expect((await t.control("/on", { serial: "SN2" })).status).toBe(200);
    const full = await t.control("/on", { serial: "SN-E1" });
    expect(full.status).toBe(503);
    expect(await json(full)).toEqual({ message: `No available proxy ports in ${t.range.first}-${t.range.last}` });

    expect((await t.control("/on", { serial: "SN1" })).status).toBe(200); // already started: its own port
    expect((await t.control("/off", { serial: "SN1" })).status).toBe(200);
    expect((await t.control("/on", { serial: "SN-E1" })).status).toBe(200);
    await t.control("/off", { serial: "SN2" });
    await t.control("/off", { serial: "SN-E1" });
  });

  it("answers 404 on /off and /status for a serial no thing carries", async () => {
    for (const path of ["/off", "/status"]) {
      const res = await t.control(path, { serial: "NO-SUCH" });
      expect(res.status).toBe(404);
      expect((await json(res)).messageKey).toBe("THING_NOT_FOUND");
    }
  });

  it("answers 404 on /off and /status for a known thing without session or device", async () => {
    for (const path of ["/off", "/status"]) {
      const res = await t.control(path, { serial: "SN2" });
      expect(res.status).toBe(404);
      expect(await json(res)).toEqual({
        message: "No proxy session for serial SN2",
        messageKey: "NOT_FOUND",
        property: "serial",
      });
    }
  });

  it("answers 404 for an unknown path", async () => {
    expect((await t.control("/nope")).status).toBe(404);
  });
});

describe("proxy control: authentication and privileges", () => {
  it("refuses a missing or unknown API key with 403 Forbidden", async () => {
    for (const apiKey of [null, "wrong"]) {
      const res = await t.control("/status", { serial: "SN1" }, { apiKey });
      expect(res.status).toBe(403);
      expect(await json(res)).toEqual({ message: "Forbidden" });
    }
  });

  it("refuses a missing or bad token with 401", async () => {
    expect((await t.control("/on", { serial: "SN1" }, { user: null })).status).toBe(401);
    const res = await fetch(`${t.controlUrl}/on?serial=SN1`, {
      headers: { "x-api-key": "test-api-key-0001", authorization: "Bearer not.a.token" },
    });
    expect(res.status).toBe(401);
  });

  it("needs Things.UPDATE on the domain of the thing with that serial", async () => {
    // eastie holds everything on east only; SN1 is in acme.
    for (const path of ["/on", "/off", "/status"]) {
      const res = await t.control(path, { serial: "SN1" }, { user: "eastie" });
      expect(res.status).toBe(403);
      expect((await json(res)).messageKey).toBe("NOT_AUTHORIZED");
    }
    const east = await t.control("/on", { serial: "SN-E1" }, { user: "eastie" });
    expect(east.status).toBe(200);
    // alice's grant on acme holds on its sub-domain east.
    expect((await t.control("/status", { serial: "SN-E1" })).status).toBe(200);
    expect((await t.control("/off", { serial: "SN-E1" }, { user: "eastie" })).status).toBe(200);
  });

  it("refuses a Read user whatever its privileges", async () => {
    const res = await t.control("/on", { serial: "SN1" }, { user: "reader" });
    expect(res.status).toBe(403);
    expect((await json(res)).messageKey).toBe("NOT_AUTHORIZED");
  });
});

describe("proxy control: query validation", () => {
  it("answers PROPERTY_REQUIRED without serial", async () => {
    for (const path of ["/on", "/off", "/status"]) {
      const res = await t.control(path, {});
      expect(res.status).toBe(400);
      expect(await json(res)).toEqual({
        message: "Property serial is required",
        messageKey: "PROPERTY_REQUIRED",
        property: "serial",
      });
    }
  });

  it("answers INVALID_ARGUMENTS naming persistent, timeout or ip_whitelist when they are wrong", async () => {
    const cases: [Record<string, string>, string][] = [
      [{ persistent: "yes" }, "persistent"],
      [{ timeout: "0" }, "timeout"],
      [{ timeout: "soon" }, "timeout"],
      [{ ip_whitelist: "localhost" }, "ip_whitelist"],
      [{ ip_whitelist: "10.0.0.1/40" }, "ip_whitelist"],
    ];
    for (const [query, property] of cases) {
      const res = await t.control("/on", { serial: "SN1", ...query });
      expect(res.status).toBe(400);
      const body = await json(res);
      expect(body.messageKey).toBe("INVALID_ARGUMENTS");
      expect(body.property).toBe(property);
    }
    expect((await t.control("/status", { serial: "SN1" })).status).toBe(404);
  });
});

describe("the proxy alone (DMS_ROLES=proxy)", () => {
  it("runs its listeners without the REST interface", async () => {
    const alone = await startTestDms({
      env: {
        DMS_ROLES: "proxy",
        DMS_PROXY_DEVICE_PORT: "0",
        DMS_PROXY_CONTROL_PORT: "0",
        DMS_PROXY_PORTS: `${t.range.first}-${t.range.last}`,
        DMS_PROXY_HOST: "127.0.0.1",
      },
    });
    try {
      expect(alone.dms.url).toBeUndefined();
      const proxy = alone.dms.services.proxy!;
      const headers = { "x-api-key": "test-api-key-0001", authorization: await tokenOf(alone, "alice") };
      const dev = new Received(await device(proxy.devicePort, "SN1"));
      const res = await fetch(`http://127.0.0.1:${proxy.controlPort}/on?serial=SN1`, { headers });
      expect(res.status).toBe(200);
      const client = new Received(await open((await json(res)).port));
      client.socket.write("alone");
      await dev.until("alone");
    } finally {
      await alone.close();
    }
  });
});
