import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, expect } from "vitest";
import { json } from "../support/http.js";
import { API_KEY, startTestDms, type TestDms } from "../support/dms.js";
import { freePortRange } from "../support/ports.js";

export { freePortRange };

export interface ProxyTestDms extends TestDms {
  controlUrl: string;
  devicePort: number;
  range: { first: number; last: number };
  /** GET on the control interface as `user` (default alice, who holds Things.* on acme). */
  control(
    path: "/on" | "/off" | "/status" | string,
    query?: Record<string, string>,
    options?: { user?: string | null; apiKey?: string | null },
  ): Promise<Response>;
  /** The /status answer for `serial`. */
  status(serial: string): Promise<{ device_connected: boolean; client_connected: boolean; transferred: number }>;
  /** /on, expected to answer 200; the host and port a client connects to. */
  on(query: Record<string, string>): Promise<{ host: string; port: number }>;
  off(serial: string): Promise<Response>;
  /** Resolves once the proxy has a session for `serial` with its device connected. */
  deviceSeen(serial: string): Promise<void>;
}

/** A whole dms with the proxy role, every port picked by the system, and `ports` free client ports. */
export async function startProxyDms(ports = 8, env: Record<string, string> = {}): Promise<ProxyTestDms> {
  const range = await freePortRange(ports);
  const t = await startTestDms({
    env: {
      DMS_ROLES: "api,proxy",
      DMS_PROXY_DEVICE_PORT: "0",
      DMS_PROXY_CONTROL_PORT: "0",
      DMS_PROXY_PORTS: `${range.first}-${range.last}`,
      DMS_PROXY_HOST: "127.0.0.1",
      ...env,
    },
  });
  const proxy = t.dms.services.proxy!;
  const controlUrl = `http://127.0.0.1:${proxy.controlPort}`;
  const control: ProxyTestDms["control"] = async (path, query = {}, options = {}) => {
    const headers: Record<string, string> = {};
    const key = options.apiKey === undefined ? API_KEY : options.apiKey;
    if (key !== null) headers["x-api-key"] = key;
    const user = options.user === undefined ? "alice" : options.user;
    if (user !== null) headers.authorization = await tokenOf(t, user);
    return fetch(`${controlUrl}${path}?${new URLSearchParams(query)}`, { headers });
  };
  const status: ProxyTestDms["status"] = async (serial) => json(await control("/status", { serial }));
  const on: ProxyTestDms["on"] = async (query) => {
    const res = await control("/on", query);
    expect(res.status).toBe(200);
    return json(res);
  };
  const off: ProxyTestDms["off"] = (serial) => control("/off", { serial });
  const deviceSeen: ProxyTestDms["deviceSeen"] = (serial) =>
    waitFor(
      async () => {
        const res = await control("/status", { serial });
        return res.status === 200 && (await json(res)).device_connected === true;
      },
      () => `device ${serial} not seen`,
    );
  return { ...t, controlUrl, devicePort: proxy.devicePort, range, control, status, on, off, deviceSeen };
}

/**
 * The test file's proxy dms, started (with `ports` client ports) before its tests and closed after them.
 * The object returned is filled in by that beforeAll hook: use it in tests and later hooks only.
 */
export function useProxyDms(ports = 8): ProxyTestDms {
  const t = {} as ProxyTestDms;
  beforeAll(async () => {
    Object.assign(t, await startProxyDms(ports));
  });
  afterAll(() => t.close());
  return t;
}

/** A token without the REST login, so it works when only the proxy role runs. */
export async function tokenOf(t: TestDms, user: string): Promise<string> {
  return (await t.dms.services.tokens.issue(user)).token;
}

/** A TCP connection, resolved once connected. */
export function open(port: number, host = "127.0.0.1"): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect({ port, host }, () => {
      s.off("error", reject);
      resolve(s);
    });
    s.once("error", reject);
  });
}

/** A device: connects to the device port and sends its serial line, plus `extra` in the same write. */
export async function device(port: number, serial: string, extra = ""): Promise<Socket> {
  const s = await open(port);
  s.setNoDelay(true);
  s.write(`${serial}\r${extra}`);
  return s;
}

/** Everything a socket receives, as text, read on demand. */
export class Received {
  text = "";
  closed = false;
  constructor(readonly socket: Socket) {
    socket.setEncoding("utf8");
    socket.on("data", (d: string) => (this.text += d));
    socket.on("error", () => undefined);
    socket.on("close", () => (this.closed = true));
  }

  async until(expected: string): Promise<void> {
    await waitFor(
      () => this.text === expected,
      () => `received ${JSON.stringify(this.text)}, want ${expected}`,
    );
  }

  async untilClosed(): Promise<void> {
    await waitFor(
      () => this.closed,
      () => "socket still open",
    );
  }
}

/** Polls `check` until it holds; the time limit is the test's. */
export async function waitFor(check: () => boolean | Promise<boolean>, what: () => string, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what()}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Resolves with the connection's error code, or "closed" when it is accepted and then closed with no data. */
export function refusedOrClosed(port: number, host = "127.0.0.1"): Promise<string> {
  return new Promise((resolve) => {
    const s = connect({ port, host });
    let data = "";
    s.on("data", (d) => (data += d.toString()));
    s.once("error", (e: NodeJS.ErrnoException) => resolve(e.code ?? "error"));
    s.once("close", () => resolve(data === "" ? "closed" : `closed after ${data}`));
  });
}
