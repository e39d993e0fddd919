import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { freePortRange } from "../support/ports.js";
import { API_KEY, BASE_PROVISION } from "../support/provision.js";
import { until } from "../support/wait.js";

const root = join(import.meta.dirname, "..", "..");

/** Runs `npm run <script>` in the repository and resolves with its exit code and output. */
function npmRun(script: string): Promise<{ code: number | null; out: string }> {
  const child = spawn("npm", ["run", script], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => (out += d.toString()));
  return new Promise((resolve) => child.on("close", (code) => resolve({ code, out })));
}

describe("the compiled service (npm run build, then node dist/main.js)", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "dms-built-"));
  let child: ChildProcess | undefined;
  afterAll(() => {
    child?.kill("SIGKILL");
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("builds, starts without tsx, answers /healthz, then FIND on a worker thread once ready, and stops on SIGTERM", async () => {
    const build = await npmRun("build");
    expect(build.code, build.out).toBe(0);

    const ports = await freePortRange(8);
    const provision = join(dataDir, "provision.json");
    writeFileSync(provision, JSON.stringify(BASE_PROVISION));
    let out = "";
    child = spawn(process.execPath, ["dist/main.js"], {
      cwd: root,
      env: {
        PATH: process.env.PATH,
        DMS_HTTP_HOST: "127.0.0.1",
        DMS_HTTP_PORT: String(ports.first),
        DMS_MQTT_PORT: String(ports.first + 1),
        DMS_PROXY_CONTROL_PORT: String(ports.first + 2),
        DMS_PROXY_DEVICE_PORT: String(ports.first + 3),
        DMS_PROXY_PORTS: `${ports.first + 4}-${ports.last}`,
        DMS_DATA_DIR: dataDir,
        DMS_PROVISION: provision,
        DMS_JWT_SECRET: "test-secret-test-secret-test-secret",
        // Every thread entry of the service: the observation writer and column builder start with
        // the store, the engine's state writer with this, a FIND thread with the request below.
        DMS_ENGINE_STATE_THREAD: "true",
        DMS_FIND_THREADS: "1",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
    const url = `http://127.0.0.1:${ports.first}`;
    await until(
      async () => (await fetch(`${url}/healthz`).catch(() => undefined))?.status === 200,
      60_000,
      "/healthz of the built service",
      100,
    );

    // Provisioning runs after the listener opens; /readyz answers 200 once it is done.
    await until(async () => (await fetch(`${url}/readyz`)).status === 200, 60_000, "/readyz", 100);

    const headers = { "content-type": "application/json", "x-api-key": API_KEY };
    const login = await fetch(`${url}/auth/login`, {
      method: "POST",
      headers,
      body: JSON.stringify({ userName: "admin", password: "admin-pw" }),
    });
    expect(login.status).toBe(200);
    const { credentials } = (await login.json()) as { credentials: { token: string } };
    const find = await fetch(`${url}/observations/find`, {
      method: "POST",
      headers: { ...headers, authorization: credentials.token },
      body: JSON.stringify({
        query: {
          size: 0,
          query: { range: { timestamp: { gte: "now-1d" } } },
          aggs: { things: { terms: { field: "thingName" } } },
        },
      }),
    });
    expect(find.status, await find.clone().text()).toBe(200);
    expect(((await find.json()) as { hits: { total: number } }).hits.total).toBe(0);

    child.kill("SIGTERM");
    const code = await new Promise<number | null>((resolve) => child!.on("close", resolve));
    expect(code, out).toBe(0);
    expect(out).not.toMatch(/tsx|ERR_/);
  }, 900_000);
});
